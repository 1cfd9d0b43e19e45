// test/gpu/races_sass/corpus_sass.cu — ATen-style CUDA kernels for the race
// corpus without PTX: built with -gencode arch=compute_90,code=sm_90, so the
// fatbin carries SASS only (as PyTorch's and cuBLAS's do) and kcheck cannot
// rewrite the kernel's PTX. Each named kernel is launched exactly once.
//
//   corpus_sass list          one line per kernel: name class expected
//   corpus_sass NAME...       runs each kernel once, in order, printing
//                             "RESULT NAME <hash of its outputs>"
//
// expected: race, nondeterminism (float atomics: order changes rounding,
// no racing plain access) or clean. The runner is run_gpu_races_sass.sh.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define B 256 // threads per block
#define G 32  // blocks of the larger kernels
#define N (B * G)

// ATen passes sizes and pointers in structs (TensorIterator's OffsetCalculator,
// std::array<char*, N>): a few kernels here take theirs that way.
struct io_args {
  const float *x;
  float *out;
  int n;
};

// ------------------------------------------------ missing barriers (shared)
__global__ void c_sh_red_nosync(const float *x, float *out) {
  __shared__ float s[B];
  int t = threadIdx.x;
  s[t] = x[blockIdx.x * B + t];
  __syncthreads();
  for (int o = B / 2; o > 0; o >>= 1) {
    if (t < o) s[t] += s[t + o]; // missing __syncthreads() after each step
  }
  if (t == 0) out[blockIdx.x] = s[0];
}
__global__ void c_sh_stencil_nosync(io_args a) {
  __shared__ float s[B + 2];
  int t = threadIdx.x, i = blockIdx.x * B + t;
  s[t + 1] = a.x[i];
  if (t == 0) s[0] = i > 0 ? a.x[i - 1] : 0.f;
  if (t == B - 1) s[B + 1] = i + 1 < a.n ? a.x[i + 1] : 0.f;
  // missing __syncthreads()
  a.out[i] = 0.25f * s[t] + 0.5f * s[t + 1] + 0.25f * s[t + 2];
}
__global__ void c_sh_reverse_nosync(const int *x, int *out) {
  __shared__ int s[B];
  int t = threadIdx.x;
  s[t] = x[blockIdx.x * B + t];
  // missing __syncthreads()
  out[blockIdx.x * B + t] = s[B - 1 - t];
}
__global__ void c_sh_hist_nosync_out(const int *x, int *out) {
  __shared__ int h[64];
  int t = threadIdx.x;
  if (t < 64) h[t] = 0;
  __syncthreads();
  atomicAdd(&h[x[blockIdx.x * B + t] & 63], 1);
  // missing __syncthreads() before the bins are written out
  if (t < 64) out[blockIdx.x * 64 + t] = h[t];
}
__global__ void c_sh_matmul_nosync_end(const float *a, const float *b, float *c) {
  // 64x64 matrices, 16x16 tiles, one tile of c per block (16 blocks)
  __shared__ float as[16][16], bs[16][16];
  int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  int row = (blockIdx.x / 4) * 16 + ty, col = (blockIdx.x % 4) * 16 + tx;
  float acc = 0;
  for (int k0 = 0; k0 < 64; k0 += 16) {
    as[ty][tx] = a[row * 64 + k0 + tx];
    bs[ty][tx] = b[(k0 + ty) * 64 + col];
    __syncthreads();
    for (int k = 0; k < 16; k++)
      acc += as[ty][k] * bs[k][tx];
    // missing __syncthreads(): the next tile overwrites what others still read
  }
  c[row * 64 + col] = acc;
}

// ------------------------------------- lost updates between blocks (global)
// 4 blocks, 2 bins, one thread per block does the read-modify-write: the
// kernel is so short that plain re-runs almost always give the same bytes.
__global__ void c_lu_sum_2bins(const float *x, float *bins) {
  __shared__ float s[B];
  int t = threadIdx.x;
  s[t] = x[blockIdx.x * B + t];
  __syncthreads();
  for (int o = B / 2; o > 0; o >>= 1) {
    if (t < o) s[t] += s[t + o];
    __syncthreads();
  }
  if (t == 0) bins[blockIdx.x % 2] = bins[blockIdx.x % 2] + s[0]; // not atomic
}
__global__ void c_lu_count(const int *x, int *count) {
  if (threadIdx.x == 0) {
    int c = 0;
    for (int i = 0; i < 32; i++)
      c += x[blockIdx.x * B + i] & 1;
    *count = *count + c; // not atomic
  }
}

// ------------------------------------------------------ last writer wins
__global__ void c_lw_scalar(int *out) {
  if (threadIdx.x == 0) out[0] = blockIdx.x * 7 + 1;
}
__global__ void c_lw_overlap(io_args a) {
  // block b writes [b*B/2, b*B/2 + B): each half is written by two blocks
  int i = blockIdx.x * (B / 2) + threadIdx.x;
  if (i < a.n) a.out[i] = a.x[i] + (float)blockIdx.x;
}

// ---------------------------------- reads of another block's output (global)
__global__ void c_xr_neighbor(const int *x, int *part, int *out) {
  int t = threadIdx.x, b = blockIdx.x;
  if (t == 0) part[b] = x[b * B] + 1;
  __syncthreads();
  if (t == 0) out[b] = part[b] + (b > 0 ? part[b - 1] : 0); // part[b-1]: another block's
}
__global__ void c_xr_inplace_blur(float *x) {
  int i = blockIdx.x * B + threadIdx.x;
  float l = i > 0 ? x[i - 1] : 0.f, r = i + 1 < N ? x[i + 1] : 0.f; // neighbours' blocks write too
  x[i] = 0.5f * x[i] + 0.25f * (l + r);
}

// ----------------------------------------- within one block (global memory)
__global__ void c_ig_rmw_count(int *count) {
  count[blockIdx.x] = count[blockIdx.x] + 1; // every thread of the block, not atomic
}
__global__ void c_ig_inplace_shift(int *x) {
  int i = blockIdx.x * B + threadIdx.x;
  if (threadIdx.x > 0) x[i] = x[i - 1] + 1; // x[i-1]: another thread's write
}

// ----------------------------------------------- float atomics (nondeterminism)
__global__ void c_fa_sum(const float *x, float *sum) {
  atomicAdd(sum, x[blockIdx.x * B + threadIdx.x]);
}
__global__ void c_fa_hist(const int *k, const float *x, float *h) {
  int i = blockIdx.x * B + threadIdx.x;
  atomicAdd(&h[k[i] & 7], x[i]);
}
// index_add_ as ATen does it on CUDA: out[index[i], :] += src[i, :]
__global__ void c_fa_index_add(const int *index, const float *src, float *out) {
  int i = blockIdx.x, c = threadIdx.x;
  atomicAdd(&out[(index[i] & 3) * B + c], src[i * B + c]);
}

// ------------------------------------------------------- race-free controls
__global__ void c_cl_red_tree(const float *x, float *out) {
  __shared__ float s[B];
  int t = threadIdx.x;
  s[t] = x[blockIdx.x * B + t];
  __syncthreads();
  for (int o = B / 2; o > 0; o >>= 1) {
    if (t < o) s[t] += s[t + o];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}
__global__ void c_cl_int_atomic(const int *x, int *bins) {
  atomicAdd(&bins[x[blockIdx.x * B + threadIdx.x] & 1], x[blockIdx.x * B + threadIdx.x]);
}
__global__ void c_cl_reverse(const int *x, int *out) {
  __shared__ int s[B];
  int t = threadIdx.x;
  s[t] = x[blockIdx.x * B + t];
  __syncthreads();
  out[blockIdx.x * B + t] = s[B - 1 - t];
}
__global__ void c_cl_scan(const int *x, int *out) {
  __shared__ int s[B];
  int t = threadIdx.x;
  s[t] = x[blockIdx.x * B + t];
  __syncthreads();
  for (int o = 1; o < B; o <<= 1) {
    int v = t >= o ? s[t - o] : 0;
    __syncthreads();
    s[t] += v;
    __syncthreads();
  }
  out[blockIdx.x * B + t] = s[t];
}
__global__ void c_cl_stencil(io_args a) {
  __shared__ float s[B + 2];
  int t = threadIdx.x, i = blockIdx.x * B + t;
  s[t + 1] = a.x[i];
  if (t == 0) s[0] = i > 0 ? a.x[i - 1] : 0.f;
  if (t == B - 1) s[B + 1] = i + 1 < a.n ? a.x[i + 1] : 0.f;
  __syncthreads();
  a.out[i] = 0.25f * s[t] + 0.5f * s[t + 1] + 0.25f * s[t + 2];
}

// ------------------------------------------------------------ harness
enum kind { K_FX_FO, K_IX_IO, K_IO, K_ARGS, K_MM, K_LW, K_XR, K_F, K_HIST, K_IDX };
struct kcase {
  const char *name, *cls, *expected;
  const void *fn;
  kind k;
  int grid;
};
#define C(n, cls, exp, k, grid)                                                                    \
  { #n, cls, exp, (const void *)n, k, grid }
static const kcase cases[] = {
    C(c_sh_red_nosync, "missing-barrier", "race", K_FX_FO, G),
    C(c_sh_stencil_nosync, "missing-barrier", "race", K_ARGS, G),
    C(c_sh_reverse_nosync, "missing-barrier", "race", K_IX_IO, G),
    C(c_sh_hist_nosync_out, "missing-barrier", "race", K_IX_IO, G),
    C(c_sh_matmul_nosync_end, "missing-barrier", "race", K_MM, 16),
    C(c_lu_sum_2bins, "lost-update", "race", K_FX_FO, 4),
    C(c_lu_count, "lost-update", "race", K_IO, 3),
    C(c_lw_scalar, "last-writer", "race", K_LW, 4),
    C(c_lw_overlap, "last-writer", "race", K_ARGS, 8),
    C(c_xr_neighbor, "cross-read", "race", K_XR, 8),
    C(c_xr_inplace_blur, "cross-read", "race", K_F, G),
    C(c_ig_rmw_count, "intra-global", "race", K_LW, 4),
    C(c_ig_inplace_shift, "intra-global", "race", K_LW, 4),
    C(c_fa_sum, "float-atomic", "nondeterminism", K_FX_FO, G),
    C(c_fa_hist, "float-atomic", "nondeterminism", K_HIST, G),
    C(c_fa_index_add, "float-atomic", "nondeterminism", K_IDX, G),
    C(c_cl_red_tree, "clean", "clean", K_FX_FO, G),
    C(c_cl_int_atomic, "clean", "clean", K_IX_IO, G),
    C(c_cl_reverse, "clean", "clean", K_IX_IO, G),
    C(c_cl_scan, "clean", "clean", K_IX_IO, G),
    C(c_cl_stencil, "clean", "clean", K_ARGS, G),
};
#define NCASES (int)(sizeof cases / sizeof cases[0])

static int ck(cudaError_t e, const char *what, const char *name) {
  if (e == cudaSuccess) return 0;
  fprintf(stderr, "corpus_sass: %s: %s: %s\n", name, what, cudaGetErrorString(e));
  return 1;
}
#define CK(call)                                                                                   \
  if (ck((call), #call, c->name)) return 1

static unsigned long long fnv(const void *p, size_t n, unsigned long long h) {
  const unsigned char *b = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* Runs one case once on fresh buffers with deterministic inputs; prints its
 * output hash. Returns nonzero on a CUDA error. */
static int run_case(const kcase *c) {
  static float hf[N];
  static int hi[N];
  srand(12345);
  for (int i = 0; i < N; i++) {
    // mixed magnitudes: the order of float additions changes the rounding
    hf[i] = (rand() % 4 == 0) ? ((rand() & 1) ? 1e7f : -1e7f) : 1.f + (rand() % 1000) / 1000.f;
    hi[i] = rand() % 1000;
  }
  float *xf, *of, *f2;
  int *xi, *oi, *i2;
  size_t fb = N * sizeof(float), ib = N * sizeof(int);
  CK(cudaMalloc(&xf, fb));
  CK(cudaMalloc(&of, fb));
  CK(cudaMalloc(&f2, fb));
  CK(cudaMalloc(&xi, ib));
  CK(cudaMalloc(&oi, ib));
  CK(cudaMalloc(&i2, ib));
  CK(cudaMemcpy(xf, hf, fb, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(f2, hf, fb, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(xi, hi, ib, cudaMemcpyHostToDevice));
  CK(cudaMemset(of, 0, fb));
  CK(cudaMemset(oi, 0, ib));
  CK(cudaMemset(i2, 0, ib));
  if (c->k == K_F) CK(cudaMemcpy(of, hf, fb, cudaMemcpyHostToDevice));
  if (c->k == K_LW && !strcmp(c->name, "c_ig_inplace_shift"))
    CK(cudaMemcpy(oi, hi, ib, cudaMemcpyHostToDevice));
  io_args ia = {xf, of, N};
  void *args[3];
  switch (c->k) {
  case K_FX_FO: args[0] = &xf, args[1] = &of; break;
  case K_IX_IO: args[0] = &xi, args[1] = &oi; break;
  case K_IO: args[0] = &xi, args[1] = &oi; break;
  case K_ARGS: args[0] = &ia; break;
  case K_MM: args[0] = &xf, args[1] = &f2, args[2] = &of; break;
  case K_LW: args[0] = &oi; break;
  case K_XR: args[0] = &xi, args[1] = &i2, args[2] = &oi; break;
  case K_F: args[0] = &of; break;
  case K_HIST: args[0] = &xi, args[1] = &xf, args[2] = &of; break;
  case K_IDX: args[0] = &xi, args[1] = &xf, args[2] = &of; break;
  }
  CK(cudaLaunchKernel(c->fn, dim3(c->grid), dim3(B), args, 0, 0));
  CK(cudaDeviceSynchronize());
  static unsigned char out[N * 4];
  unsigned long long h = 1469598103934665603ull;
  CK(cudaMemcpy(out, of, fb, cudaMemcpyDeviceToHost));
  h = fnv(out, fb, h);
  CK(cudaMemcpy(out, oi, ib, cudaMemcpyDeviceToHost));
  h = fnv(out, ib, h);
  cudaFree(xf), cudaFree(of), cudaFree(f2), cudaFree(xi), cudaFree(oi), cudaFree(i2);
  printf("RESULT %s %016llx\n", c->name, h);
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: corpus_sass list | corpus_sass NAME...\n");
    return 2;
  }
  if (!strcmp(argv[1], "list")) {
    for (int i = 0; i < NCASES; i++)
      printf("%s %s %s\n", cases[i].name, cases[i].cls, cases[i].expected);
    return 0;
  }
  int rc = 0;
  for (int a = 1; a < argc; a++) {
    const kcase *c = NULL;
    for (int i = 0; i < NCASES; i++)
      if (!strcmp(argv[a], cases[i].name)) c = &cases[i];
    if (!c) {
      fprintf(stderr, "corpus_sass: no kernel %s\n", argv[a]);
      rc = 2;
      continue;
    }
    if (run_case(c)) rc = 1; // go on with the next one
  }
  return rc;
}
