// libkcheck/kernels/perturb_kernels.cu — kcheck's own device kernels for
// timing perturbation. Compiled to PTX (perturb_kernels.ptx, committed) and
// loaded by the shadow executor; names are C so the CPU stand-in can bind
// them to its C implementations. Nothing here touches application memory.

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
// (first index) with one pair of atomics for the whole block: one per
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
      atomicMin(&out[1], first);
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
// words, out[1] holds the smallest differing word index (initialized to
// ~0 by the caller). Lets a check compare on the device and copy back only
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
// over words[r] 32-bit words into out[2r] (count) and out[2r+1] (first
// index, initialized to ~0 by the caller). Regions are cut into chunks of
// KC_CMP_CHUNK words; start[r] is region r's first chunk (start[n] all of
// them); each block takes chunks in turn, so small regions cost no launch
// of their own and large ones spread over every SM.
#define KC_CMP_MAX 64
#define KC_CMP_CHUNK 16384ull
// kc_hash_table's pairs of words never straddle two chunks.
static_assert(KC_CMP_CHUNK % 4 == 0, "a chunk holds whole pairs and whole 16-byte loads");
struct kc_cmp_table {
  unsigned long long a[KC_CMP_MAX], b[KC_CMP_MAX], words[KC_CMP_MAX];
  unsigned long long start[KC_CMP_MAX + 1];
  unsigned long long n;
};

extern "C" __global__ void kc_compare_table(const struct kc_cmp_table t, unsigned long long *out) {
  unsigned long long chunks = t.start[t.n];
  unsigned r = 0;
  for (unsigned long long c = blockIdx.x; c < chunks; c += gridDim.x) {
    while (r + 1 < t.n && t.start[r + 1] <= c)
      r++;
    unsigned long long lo = (c - t.start[r]) * KC_CMP_CHUNK, hi = lo + KC_CMP_CHUNK;
    if (hi > t.words[r]) hi = t.words[r];
    unsigned long long count = 0, first = ~0ull;
    compare_range((const unsigned int *)t.a[r], (const unsigned int *)t.b[r], lo, hi, threadIdx.x,
                  blockDim.x, &count, &first);
    block_report(count, first, &out[2 * r]);
  }
}

// One term of a region's hash: pair p of its 32-bit words (word 2p in the
// low half, word 2p + 1 in the high half, 0 past the region's end) times
// an odd multiplier drawn from p and the seed. An odd multiplier is
// invertible mod 2^64, so changing any one pair always changes its term.
// A region's hash is the sum of its terms mod 2^64, so blocks add their
// parts in any order. Two 64-bit multiplies per 8 bytes: the hash keeps up
// with the memory it reads, where a full mix of each word (splitmix64's
// finaliser, six multiplies per 8 bytes) took longer than the second read
// it saves.
__device__ static unsigned long long pair_term(unsigned long long p, unsigned long long v,
                                               unsigned long long seed) {
  unsigned long long m = (p ^ seed) * 0x9e3779b97f4a7c15ull;
  m ^= m >> 29;
  return (v ^ seed) * (m | 1);
}

// Every region of a check hashed in one launch (the table of
// kc_compare_table; b[] unused): out[r] += the hash of a[r]'s words[r]
// words (the caller zeroes out[]). Reads each region once, where a
// comparison reads it and its saved copy: a re-run's result is first
// compared by hash with the application's, and only a region whose hash
// differs is compared word by word. Chunks hold an even number of words,
// so no pair straddles two blocks.
extern "C" __global__ void kc_hash_table(const struct kc_cmp_table t, unsigned long long seed,
                                         unsigned long long *out) {
  unsigned long long chunks = t.start[t.n];
  unsigned r = 0;
  __shared__ unsigned long long s_sum[32];
  for (unsigned long long c = blockIdx.x; c < chunks; c += gridDim.x) {
    while (r + 1 < t.n && t.start[r + 1] <= c)
      r++;
    unsigned long long lo = (c - t.start[r]) * KC_CMP_CHUNK, hi = lo + KC_CMP_CHUNK;
    if (hi > t.words[r]) hi = t.words[r];
    const unsigned int *a = (const unsigned int *)t.a[r];
    unsigned long long h = 0, p = lo / 2 + threadIdx.x;
    if ((unsigned long long)a % 16 == 0 && lo % 4 == 0) {
      const ulonglong2 *a4 = (const ulonglong2 *)a;
      unsigned long long qhi = hi / 4;
      for (unsigned long long q = lo / 4 + threadIdx.x; q < qhi; q += blockDim.x) {
        ulonglong2 x = a4[q];
        h += pair_term(2 * q, x.x, seed) + pair_term(2 * q + 1, x.y, seed);
      }
      p = (qhi * 4 > lo ? qhi * 2 : lo / 2) + threadIdx.x;
    }
    for (; 2 * p < hi; p += blockDim.x) {
      unsigned long long v = a[2 * p];
      if (2 * p + 1 < hi) v |= (unsigned long long)a[2 * p + 1] << 32;
      h += pair_term(p, v, seed);
    }
    for (int o = 16; o; o >>= 1)
      h += __shfl_down_sync(0xffffffffu, h, o);
    unsigned warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
    if (threadIdx.x % 32 == 0) s_sum[warp] = h;
    __syncthreads();
    if (threadIdx.x == 0) {
      for (unsigned w = 1; w < warps; w++)
        h += s_sum[w];
      atomicAdd(&out[r], h);
    }
    __syncthreads(); // s_sum is reused by the block's next chunk
  }
}
