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
  unsigned long long x = seed ^ (0x9e3779b97f4a7c15ull * (smid + 1)) ^ ((unsigned long long)blockIdx.x << 32);
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
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < words;
         i += stride)
      buf[i] = buf[i] * 1664525u + 1013904223u;
}

// Writes a buffer larger than L2 so the next kernel starts with a cold cache.
extern "C" __global__ void kc_flush_l2(unsigned int *buf, unsigned long long words) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < words;
       i += stride)
    buf[i] = (unsigned int)i;
}

// Compares two device buffers word by word: out[0] counts differing 32-bit
// words, out[1] holds the smallest differing word index (initialized to
// ~0 by the caller). Lets a check compare on the device and copy back only
// the first difference.
extern "C" __global__ void kc_compare(const unsigned int *a, const unsigned int *b,
                                      unsigned long long words, unsigned long long *out) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned long long tid = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  unsigned long long count = 0, first = ~0ull, i = tid;
  // 16-byte loads where both buffers allow them (allocations and kcheck's
  // staging slots are 256-byte aligned): the comparison runs at copy
  // bandwidth, not at the rate of 4-byte loads.
  if (((unsigned long long)a | (unsigned long long)b) % 16 == 0) {
    const uint4 *a4 = (const uint4 *)a, *b4 = (const uint4 *)b;
    unsigned long long quads = words / 4;
    for (unsigned long long q = tid; q < quads; q += stride) {
      uint4 x = a4[q], y = b4[q];
      unsigned int d[4] = {x.x != y.x, x.y != y.y, x.z != y.z, x.w != y.w};
      for (int k = 0; k < 4; k++)
        if (d[k]) {
          count++;
          if (4 * q + k < first) first = 4 * q + k;
        }
    }
    i = 4 * quads + tid;
  }
  for (; i < words; i += stride)
    if (a[i] != b[i]) {
      count++;
      if (i < first) first = i;
    }
  if (count) {
    atomicAdd(&out[0], count);
    atomicMin(&out[1], first);
  }
}
