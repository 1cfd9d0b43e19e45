/* libkcheck/exec/kernels/region_hash.h — the keyed hash by which a re-run's
 * result is compared with the application's (hash_compare), one definition
 * for kcheck's device kernels (perturb_kernels.cu) and the CPU stand-in's
 * versions of them (test/fakecuda), so a region hashes alike on both.
 *
 * A region is read as quads (four 32-bit words; words past its end are 0).
 * Quad q is hashed by two NH lanes (Black et al., UMAC): lane A adds
 * (w0 + k0)(w1 + k1) + (w2 + k2)(w3 + k3), lane B the same with the keys
 * shifted by two words (k2..k5), each product of two 32-bit sums taken to
 * 64 bits; with uniform keys one lane of two different quad sequences
 * collides with probability <= 2^-32, and the shifted lane (Toeplitz)
 * squares that. The keys depend on q mod 256, so each thread of a
 * 256-thread block draws its six once; every run of 256 quads (1024 words)
 * is then weighted by an odd multiplier drawn from its index, so runs that
 * trade places or repeat do not cancel. A region's hash is the sum of its
 * weighted terms mod 2^64 per lane: blocks add their parts in any order.
 * A term costs four 32x32->64-bit multiplies and two 64-bit ones per 16
 * bytes (and the weight's one), which keeps up with the memory it reads.
 * The earlier pair hash (one odd multiplier per pair of words) let two
 * sign-bit flips cancel: 2^63 (m1 + m2) is 0 mod 2^64 for odd m1, m2.
 *
 * The seed is drawn per check from a per-process random key, so which
 * contents collide is not knowable in advance. */
#ifndef KC_REGION_HASH_H
#define KC_REGION_HASH_H

#ifdef __CUDACC__
#define KC_RH_FN __host__ __device__ static inline
#else
#define KC_RH_FN static inline
#endif

/* Quads that share one multiplier, and the period of the keys. */
#define KC_RH_RUN 256u

/* splitmix64's finaliser: keys and weights from a counter and the seed. */
KC_RH_FN unsigned long long kc_rh_mix(unsigned long long z) {
  z ^= z >> 30;
  z *= 0xbf58476d1ce4e5b9ull;
  z ^= z >> 27;
  z *= 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* The six 32-bit keys of the quads at position j (q mod KC_RH_RUN). */
KC_RH_FN void kc_rh_keys(unsigned long long j, unsigned long long seed, unsigned k[6]) {
  for (int i = 0; i < 3; i++) {
    unsigned long long x = kc_rh_mix(seed + 0x9e3779b97f4a7c15ull * (3 * j + (unsigned)i + 1));
    k[2 * i] = (unsigned)x;
    k[2 * i + 1] = (unsigned)(x >> 32);
  }
}

/* Adds quad q (words w0..w3, keys k of q mod KC_RH_RUN) to h[0], h[1]. */
KC_RH_FN void kc_rh_quad(unsigned long long q, unsigned w0, unsigned w1, unsigned w2, unsigned w3,
                         const unsigned k[6], unsigned long long seed, unsigned long long h[2]) {
  unsigned long long a = (unsigned long long)(unsigned)(w0 + k[0]) * (unsigned)(w1 + k[1]) +
                         (unsigned long long)(unsigned)(w2 + k[2]) * (unsigned)(w3 + k[3]);
  unsigned long long b = (unsigned long long)(unsigned)(w0 + k[2]) * (unsigned)(w1 + k[3]) +
                         (unsigned long long)(unsigned)(w2 + k[4]) * (unsigned)(w3 + k[5]);
  /* the run's weights: one multiply, recomputed per quad (cheaper than a
   * branch on a change of run in the loops that call this) */
  unsigned long long r = ((q / KC_RH_RUN) ^ seed) * 0x9e3779b97f4a7c15ull;
  r ^= r >> 29;
  h[0] += a * (r | 1);
  h[1] += b * (((r << 32) | (r >> 32)) | 1);
}

/* A whole region of `words` words, quad by quad, added to h[0], h[1]: the
 * definition the kernels' parallel sums must equal (the CPU stand-in's
 * kernels, the unit test and bench/own_kernels compute it so). */
KC_RH_FN void kc_rh_region(const unsigned *a, unsigned long long words, unsigned long long seed,
                           unsigned long long h[2]) {
  unsigned k[6];
  for (unsigned long long q = 0; 4 * q < words; q++) {
    unsigned w[4];
    for (unsigned i = 0; i < 4; i++)
      w[i] = 4 * q + i < words ? a[4 * q + i] : 0;
    kc_rh_keys(q % KC_RH_RUN, seed, k);
    kc_rh_quad(q, w[0], w[1], w[2], w[3], k, seed, h);
  }
}

#endif
