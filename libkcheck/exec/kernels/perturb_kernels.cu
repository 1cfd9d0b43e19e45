// libkcheck/exec/kernels/perturb_kernels.cu — kcheck's own device kernels for
// timing perturbation. Compiled to PTX (perturb_kernels.ptx, committed) and
// loaded by the shadow executor; names are C so the CPU stand-in can bind
// them to its C implementations. Nothing here touches application memory.

#include "cmp_table.h"
#include "region_hash.h"

// Fills this block's whole shared memory with a pattern from the seed, the
// SM id and the block index, so a kernel that reads shared memory it never
// wrote sees different bytes than in the application's own run.
extern "C" __global__ void kc_scrub_shared(unsigned long long seed) {
  extern __shared__ unsigned int smem[];
  unsigned int bytes, smid;
  asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  unsigned long long x =
      seed ^ (0x9e3779b97f4a7c15ull * (smid + 1)) ^ ((unsigned long long)blockIdx.x << 32);
  for (unsigned int i = threadIdx.x; i < bytes / 4; i += blockDim.x) {
    unsigned long long z = x + 0xbf58476d1ce4e5b9ull * (i + 1);
    z ^= z >> 31;
    z *= 0x94d049bb133111ebull;
    z ^= z >> 29;
    ((volatile unsigned int *)smem)[i] = (unsigned int)z;
  }
}

// Holds its SM until *release is non-zero or max_ns passed (a safety net so
// a lost release can never hang the device).
extern "C" __global__ void kc_occupier(volatile unsigned int *release, unsigned long long seed,
                                       unsigned long long max_ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  (void)seed;
  do {
    if (release && *release) break;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < max_ns);
}

// Memory traffic from another stream while the kernel under test runs.
extern "C" __global__ void kc_hammer(unsigned int *buf, unsigned long long words,
                                     unsigned long long iters) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long it = 0; it < iters; it++)
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         i < words; i += stride)
      buf[i] = buf[i] * 1664525u + 1013904223u;
}

// Writes a buffer larger than L2 so the next kernel starts with a cold cache.
extern "C" __global__ void kc_flush_l2(unsigned int *buf, unsigned long long words) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < words;
       i += stride)
    buf[i] = (unsigned int)i;
}

// The differences one block found, summed into out[0] (count) and out[1]
// (the first index, kept as ~index by atomicMax, so the caller's slots
// start as zeros: a device memset, not a copy from the host) with one pair
// of atomics for the whole block: one per
// thread serialised on a single address, and a pass over a region the
// launch rewrote cost more than the copy of it. blockDim.x is a multiple of
// 32 (kcheck launches 256); every thread of the block calls this.
__device__ static void block_report(unsigned long long count, unsigned long long first,
                                    unsigned long long *out) {
  if (!__syncthreads_or(count != 0)) return;
  __shared__ unsigned long long s_count[32], s_first[32];
  for (int o = 16; o; o >>= 1) {
    count += __shfl_down_sync(0xffffffffu, count, o);
    unsigned long long f = __shfl_down_sync(0xffffffffu, first, o);
    if (f < first) first = f;
  }
  unsigned warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  if (threadIdx.x % 32 == 0) s_count[warp] = count, s_first[warp] = first;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (unsigned w = 1; w < warps; w++) {
      count += s_count[w];
      if (s_first[w] < first) first = s_first[w];
    }
    if (count) {
      atomicAdd(&out[0], count);
      atomicMax(&out[1], ~first);
    }
  }
  __syncthreads(); // s_count/s_first are reused by the block's next call
}

// Compares words [lo, hi) of a and b; adds to *count, lowers *first.
__device__ static void compare_range(const unsigned int *a, const unsigned int *b,
                                     unsigned long long lo, unsigned long long hi,
                                     unsigned long long tid, unsigned long long stride,
                                     unsigned long long *count, unsigned long long *first) {
  unsigned long long i = lo + tid;
  // 16-byte loads where both buffers allow them (allocations and kcheck's
  // staging slots are 256-byte aligned): the comparison runs at copy
  // bandwidth, not at the rate of 4-byte loads.
  if (((unsigned long long)a | (unsigned long long)b) % 16 == 0 && lo % 4 == 0) {
    const uint4 *a4 = (const uint4 *)a, *b4 = (const uint4 *)b;
    unsigned long long qhi = hi / 4;
    for (unsigned long long q = lo / 4 + tid; q < qhi; q += stride) {
      uint4 x = a4[q], y = b4[q];
      unsigned int d[4] = {x.x != y.x, x.y != y.y, x.z != y.z, x.w != y.w};
      for (int k = 0; k < 4; k++)
        if (d[k]) {
          (*count)++;
          if (4 * q + k < *first) *first = 4 * q + k;
        }
    }
    i = (qhi * 4 > lo ? qhi * 4 : lo) + tid;
  }
  for (; i < hi; i += stride)
    if (a[i] != b[i]) {
      (*count)++;
      if (i < *first) *first = i;
    }
}

// Compares two device buffers word by word: out[0] counts differing 32-bit
// words, out[1] holds ~(the smallest differing word index) (both zeroed by
// the caller). Lets a check compare on the device and copy back only
// the first difference.
extern "C" __global__ void kc_compare(const unsigned int *a, const unsigned int *b,
                                      unsigned long long words, unsigned long long *out) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned long long tid = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  unsigned long long count = 0, first = ~0ull;
  compare_range(a, b, 0, words, tid, stride, &count, &first);
  block_report(count, first, out);
}

// Every region of a check in one launch: region r compares a[r] with b[r]
// over words[r] 32-bit words into out[2r] (count) and out[2r+1] (~first
// index), zeroed by the caller; with hout, a[r]'s hash (region_hash.h,
// seeded with seed) is added to hout[2r], hout[2r+1] in the same pass
// (the comparison after the application's launch reads post-state A
// anyway: its hash costs no read of its own). Regions are cut into chunks
// of t.chunk words; start[r] is region r's first chunk (start[n] all
// of them); each block takes chunks in turn, so small regions cost no
// launch of their own and large ones spread over every SM.
// Quads never straddle two chunks; a chunk is a whole number of the hash's
// runs, so a thread's position in a run stays the same from chunk to chunk.
static_assert(KC_CMP_CHUNK_SMALL % (4 * KC_RH_RUN) == 0 && KC_CMP_CHUNK_LARGE % (4 * KC_RH_RUN) == 0,
              "a chunk holds whole runs of quads");

// Quad q of a region of `words` words: a 16-byte load where the address
// allows it and the quad is whole, else word by word, 0 past the end.
__device__ static uint4 load_quad(const unsigned int *a, unsigned long long q,
                                  unsigned long long words, bool vec) {
  if (vec && 4 * q + 4 <= words) return ((const uint4 *)a)[q];
  uint4 w;
  w.x = 4 * q < words ? a[4 * q] : 0;
  w.y = 4 * q + 1 < words ? a[4 * q + 1] : 0;
  w.z = 4 * q + 2 < words ? a[4 * q + 2] : 0;
  w.w = 4 * q + 3 < words ? a[4 * q + 3] : 0;
  return w;
}

// A block's two hash lanes added into out[0], out[1] (one pair of atomics
// a block). Every thread of the block calls this.
__device__ static void block_hash_report(unsigned long long h0, unsigned long long h1,
                                         unsigned long long *out) {
  __shared__ unsigned long long s_h[2][32];
  for (int o = 16; o; o >>= 1) {
    h0 += __shfl_down_sync(0xffffffffu, h0, o);
    h1 += __shfl_down_sync(0xffffffffu, h1, o);
  }
  unsigned warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  if (threadIdx.x % 32 == 0) s_h[0][warp] = h0, s_h[1][warp] = h1;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (unsigned w = 1; w < warps; w++)
      h0 += s_h[0][w], h1 += s_h[1][w];
    atomicAdd(&out[0], h0);
    atomicAdd(&out[1], h1);
  }
  __syncthreads(); // s_h is reused by the block's next chunk
}

// The launch's 2n sums published to host memory mapped for the device
// (pub; NULL: the host copies them back itself) by the block that finishes
// last: every block bumps *done after its atomics, and the one that takes
// it to gridDim.x reads the sums, writes them to pub, leaves out[] zeroed
// and sets *done back to 0 for the next launch. The host's wait for the
// stream then finds them in its own memory, with no copy queued behind the
// kernel and no memset before the next hash into out[]: a hash costs one
// device operation, not two or three. Every thread of the block calls this
// after its last block_hash_report.
__device__ static void publish_sums(unsigned long long *out, unsigned long long n2, unsigned *done,
                                    unsigned long long *pub) {
  if (!pub) return;
  __shared__ bool last;
  if (threadIdx.x == 0) {
    __threadfence(); // this block's sums before its count
    last = atomicAdd(done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence(); // every other block's sums, counted, are visible
  for (unsigned long long i = threadIdx.x; i < n2; i += blockDim.x)
    pub[i] = atomicExch(&out[i], 0ull);
  if (threadIdx.x == 0) *done = 0;
  __threadfence_system();
}

// The keys of this thread's position in a run: a thread of a 256-thread
// block stepping by 256 quads from a run's start keeps its position.
struct rh_key_cache {
  unsigned k[6];
  unsigned long long j;
};

__device__ static const unsigned *keys_for(struct rh_key_cache *c, unsigned long long q,
                                           unsigned long long seed) {
  if (c->j != q % KC_RH_RUN) {
    c->j = q % KC_RH_RUN;
    kc_rh_keys(c->j, seed, c->k);
  }
  return c->k;
}

extern "C" __global__ void kc_compare_table(const struct kc_cmp_table t, unsigned long long *out,
                                            unsigned long long seed, unsigned long long *hout) {
  unsigned long long chunks = t.start[t.n];
  unsigned r = 0;
  struct rh_key_cache kc;
  kc.j = ~0ull;
  for (unsigned long long c = blockIdx.x; c < chunks; c += gridDim.x) {
    while (r + 1 < t.n && t.start[r + 1] <= c)
      r++;
    unsigned long long lo = (c - t.start[r]) * t.chunk, hi = lo + t.chunk;
    if (hi > t.words[r]) hi = t.words[r];
    unsigned long long count = 0, first = ~0ull;
    const unsigned int *a = (const unsigned int *)t.a[r], *b = (const unsigned int *)t.b[r];
    if (!hout) {
      compare_range(a, b, lo, hi, threadIdx.x, blockDim.x, &count, &first);
      block_report(count, first, &out[2 * r]);
      continue;
    }
    // compare and hash a in one pass, quad by quad
    unsigned long long h[2] = {0, 0};
    bool vec = ((unsigned long long)a | (unsigned long long)b) % 16 == 0;
    for (unsigned long long q = lo / 4 + threadIdx.x; 4 * q < hi; q += blockDim.x) {
      uint4 x = load_quad(a, q, hi, vec), y = load_quad(b, q, hi, vec);
      unsigned d[4] = {x.x != y.x, x.y != y.y, x.z != y.z, x.w != y.w};
      for (int k = 0; k < 4; k++)
        if (d[k]) { // past hi both quads read 0: no difference there
          count++;
          if (4 * q + k < first) first = 4 * q + k;
        }
      kc_rh_quad(q, x.x, x.y, x.z, x.w, keys_for(&kc, q, seed), seed, h);
    }
    block_report(count, first, &out[2 * r]);
    block_hash_report(h[0], h[1], &hout[2 * r]);
  }
}

// Every region of a check hashed in one launch (the table of
// kc_compare_table; b[] unused): out[2r], out[2r+1] += the two lanes of
// the hash of a[r]'s words[r] words (region_hash.h; the caller zeroes
// out[]). Reads each region once, where a comparison reads it and its
// saved copy: a re-run's result is first compared by hash with the
// application's, and only a region whose hash differs is compared word by
// word.
// With pub, the sums are published there too (publish_sums).
extern "C" __global__ void kc_hash_table(const struct kc_cmp_table t, unsigned long long seed,
                                         unsigned long long *out, unsigned *done,
                                         unsigned long long *pub) {
  unsigned long long chunks = t.start[t.n];
  unsigned r = 0;
  struct rh_key_cache kc;
  kc.j = ~0ull;
  for (unsigned long long c = blockIdx.x; c < chunks; c += gridDim.x) {
    while (r + 1 < t.n && t.start[r + 1] <= c)
      r++;
    unsigned long long lo = (c - t.start[r]) * t.chunk, hi = lo + t.chunk;
    if (hi > t.words[r]) hi = t.words[r];
    const unsigned int *a = (const unsigned int *)t.a[r];
    bool vec = (unsigned long long)a % 16 == 0;
    unsigned long long h[2] = {0, 0};
    for (unsigned long long q = lo / 4 + threadIdx.x; 4 * q < hi; q += blockDim.x) {
      uint4 x = load_quad(a, q, hi, vec);
      kc_rh_quad(q, x.x, x.y, x.z, x.w, keys_for(&kc, q, seed), seed, h);
    }
    block_hash_report(h[0], h[1], &out[2 * r]);
  }
  publish_sums(out, 2 * t.n, done, pub);
}

// The pre-state saved and hashed in one pass (the table of
// kc_compare_table): b[r] = a[r] over words[r] words, and out[2r],
// out[2r+1] += the two lanes of the hash of those words (region_hash.h;
// the caller zeroes out[]). The pass that finds what the application's
// launch changed then hashes its result alone (one read of each region)
// instead of comparing it with the saved copy (two).
// With pub, the sums are published there too (publish_sums).
extern "C" __global__ void kc_copy_hash_table(const struct kc_cmp_table t,
                                              unsigned long long seed, unsigned long long *out,
                                              unsigned *done, unsigned long long *pub) {
  unsigned long long chunks = t.start[t.n];
  unsigned r = 0;
  struct rh_key_cache kc;
  kc.j = ~0ull;
  for (unsigned long long c = blockIdx.x; c < chunks; c += gridDim.x) {
    while (r + 1 < t.n && t.start[r + 1] <= c)
      r++;
    unsigned long long lo = (c - t.start[r]) * t.chunk, hi = lo + t.chunk;
    if (hi > t.words[r]) hi = t.words[r];
    const unsigned int *a = (const unsigned int *)t.a[r];
    unsigned int *b = (unsigned int *)t.b[r];
    bool vec = ((unsigned long long)a | (unsigned long long)b) % 16 == 0;
    unsigned long long h[2] = {0, 0};
    for (unsigned long long q = lo / 4 + threadIdx.x; 4 * q < hi; q += blockDim.x) {
      uint4 x = load_quad(a, q, hi, vec);
      if (vec && 4 * q + 4 <= hi)
        ((uint4 *)b)[q] = x;
      else {
        if (4 * q < hi) b[4 * q] = x.x;
        if (4 * q + 1 < hi) b[4 * q + 1] = x.y;
        if (4 * q + 2 < hi) b[4 * q + 2] = x.z;
        if (4 * q + 3 < hi) b[4 * q + 3] = x.w;
      }
      kc_rh_quad(q, x.x, x.y, x.z, x.w, keys_for(&kc, q, seed), seed, h);
    }
    block_hash_report(h[0], h[1], &out[2 * r]);
  }
  publish_sums(out, 2 * t.n, done, pub);
}
