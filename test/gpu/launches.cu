// test/gpu/launches.cu — a CUDA program exercising every launch path kcheck
// interposes, with results verified on the host.
//
//   kc_axpy            <<<>>>, pointer arguments, default stream
//   kc_struct_gather   <<<>>>, one struct parameter holding device pointers
//   kc_transform<T,K>  <<<>>>, templated (mangled names), three instances
//   kc_stream_fill     <<<>>> on a created non-blocking stream
//   kc_cluster_scale   cudaLaunchKernelEx with a cluster-dimension attribute
//   kc_coop_reduce     cudaLaunchCooperativeKernel with a grid-wide sync
//   kc_driver_inc      cuLaunchKernel (linked driver symbol, kernelParams form)
//                      and cuLaunchKernel from cudaGetDriverEntryPointByVersion
//                      (`extra` buffer form), on a CUfunction
//
// Prints `LAUNCHES <n>` (launches this program made), `CHECKSUM <hex>` (FNV-1a
// over every output buffer) and exits 0 only when every result is correct.
#include <cooperative_groups.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace cg = cooperative_groups;

#define CK(x)                                                                        \
  do {                                                                               \
    cudaError_t e_ = (x);                                                            \
    if (e_ != cudaSuccess) {                                                         \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(2);                                                                       \
    }                                                                                \
  } while (0)

#define CKD(x)                                                                 \
  do {                                                                         \
    CUresult r_ = (x);                                                         \
    if (r_ != CUDA_SUCCESS) {                                                  \
      const char *s_ = "?";                                                    \
      cuGetErrorString(r_, &s_);                                               \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, s_);          \
      exit(2);                                                                 \
    }                                                                          \
  } while (0)

static long g_launches;
static int g_failures;
static uint64_t g_fnv = 1469598103934665603ull;

static void fnv(const void *p, size_t n) {
  const unsigned char *b = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++) {
    g_fnv ^= b[i];
    g_fnv *= 1099511628211ull;
  }
}

static void expect(bool ok, const char *what, size_t i) {
  if (!ok) {
    if (g_failures < 20) fprintf(stderr, "MISMATCH %s at element %zu\n", what, i);
    g_failures++;
  }
}

__host__ __device__ static inline unsigned mix(unsigned x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// ---------------------------------------------------------------- kernels

__global__ void kc_axpy(const float *x, float *y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

struct GatherArgs {
  const int *in;
  int n;
  int mul;
  int *out;
  long long tag;  // a non-pointer 64-bit word next to the pointers
};

__global__ void kc_struct_gather(GatherArgs a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < a.n) a.out[i] = a.in[a.n - 1 - i] * a.mul + (int)(a.tag & 0xff);
}

template <typename T, int K>
__global__ void kc_transform(const T *in, T *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * (T)K + (T)1;
}

__global__ void kc_stream_fill(unsigned *out, int n, unsigned seed) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = mix((unsigned)i ^ seed);
}

__global__ void kc_cluster_scale(const float *in, float *out, int n, float s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * s;
}

// Deterministic: per-block partial sums in fixed order, then one thread adds
// the partials in block order after the grid-wide barrier.
__global__ void kc_coop_reduce(const int *in, long long *partial, long long *total, int n) {
  cg::grid_group grid = cg::this_grid();
  __shared__ long long sh[256];
  long long acc = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    acc += in[i];
  sh[threadIdx.x] = acc;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sh[0];
  grid.sync();
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    long long t = 0;
    for (unsigned b = 0; b < gridDim.x; b++) t += partial[b];
    *total = t;
  }
}

extern "C" __global__ void kc_driver_inc(int *p, int n, int d) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += d;
}

// ---------------------------------------------------------------- helpers

template <typename T>
static T *dalloc_copy(const std::vector<T> &h) {
  T *d = nullptr;
  CK(cudaMalloc(&d, h.size() * sizeof(T)));
  CK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

template <typename T>
static std::vector<T> dcopy_back(const T *d, size_t n) {
  std::vector<T> h(n);
  CK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

template <typename T, int K>
static void run_transform(int n) {
  std::vector<T> hin(n);
  for (int i = 0; i < n; i++) hin[i] = (T)((i * 37) % 101) - (T)50;
  T *din = dalloc_copy(hin);
  T *dout = dalloc_copy(std::vector<T>(n, (T)0));
  kc_transform<T, K><<<(n + 127) / 128, 128>>>(din, dout, n);
  g_launches++;
  CK(cudaGetLastError());
  std::vector<T> hout = dcopy_back(dout, n);
  for (int i = 0; i < n; i++) expect(hout[i] == hin[i] * (T)K + (T)1, "kc_transform", (size_t)i);
  fnv(hout.data(), hout.size() * sizeof(T));
  CK(cudaFree(din));
  CK(cudaFree(dout));
}

int main() {
  int dev = 0;
  CK(cudaSetDevice(dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  printf("device %s sm_%d%d, %d SMs\n", prop.name, prop.major, prop.minor,
         prop.multiProcessorCount);

  // 1. pointer arguments, default stream.
  {
    const int n = 10007;
    std::vector<float> hx(n), hy(n);
    for (int i = 0; i < n; i++) hx[i] = (float)(i % 97) * 0.25f, hy[i] = (float)(i % 13) - 6.0f;
    float *dx = dalloc_copy(hx), *dy = dalloc_copy(hy);
    kc_axpy<<<(n + 255) / 256, 256>>>(dx, dy, 2.0f, n);
    g_launches++;
    CK(cudaGetLastError());
    std::vector<float> out = dcopy_back(dy, n);
    for (int i = 0; i < n; i++) expect(out[i] == 2.0f * hx[i] + hy[i], "kc_axpy", (size_t)i);
    fnv(out.data(), out.size() * sizeof(float));
    CK(cudaFree(dx));
    CK(cudaFree(dy));
  }

  // 2. a struct parameter with device pointers inside; both pointers point
  // into the middle of one allocation (allocation != buffer).
  {
    const int n = 4099;
    std::vector<int> hbuf(3 * n);
    for (int i = 0; i < 3 * n; i++) hbuf[i] = (i * 7919) % 1000 - 500;
    int *dbuf = dalloc_copy(hbuf);
    GatherArgs a;
    a.in = dbuf + 16;
    a.out = dbuf + 16 + n + 64;
    a.n = n;
    a.mul = -3;
    a.tag = 0x1234567800000042ll;
    kc_struct_gather<<<(n + 127) / 128, 128>>>(a);
    g_launches++;
    CK(cudaGetLastError());
    std::vector<int> out = dcopy_back(dbuf, 3 * n);
    for (int i = 0; i < n; i++)
      expect(out[16 + n + 64 + i] == hbuf[16 + n - 1 - i] * -3 + 0x42, "kc_struct_gather",
             (size_t)i);
    fnv(out.data(), out.size() * sizeof(int));
    CK(cudaFree(dbuf));
  }

  // 3. templated kernels (mangled names).
  run_transform<float, 3>(3001);
  run_transform<int, 7>(2049);
  run_transform<double, 2>(513);

  // 4. a non-default stream.
  {
    const int n = 65537;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    unsigned *d = nullptr;
    CK(cudaMalloc(&d, n * sizeof(unsigned)));
    kc_stream_fill<<<(n + 255) / 256, 256, 0, s>>>(d, n, 0xC0FFEEu);
    g_launches++;
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(s));
    std::vector<unsigned> out = dcopy_back(d, n);
    for (int i = 0; i < n; i++) expect(out[i] == mix((unsigned)i ^ 0xC0FFEEu), "kc_stream_fill", (size_t)i);
    fnv(out.data(), out.size() * sizeof(unsigned));
    CK(cudaFree(d));
    CK(cudaStreamDestroy(s));
  }

  // 5. cudaLaunchKernelEx with a cluster-dimension attribute (sm_90).
  {
    const int n = 8192;
    std::vector<float> hin(n);
    for (int i = 0; i < n; i++) hin[i] = (float)(i % 1021) * 0.5f - 100.0f;
    float *din = dalloc_copy(hin);
    float *dout = dalloc_copy(std::vector<float>(n, 0.0f));
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(n / 128, 1, 1);  // 64 blocks: a multiple of the cluster size
    cfg.blockDim = dim3(128, 1, 1);
    cfg.dynamicSmemBytes = 0;
    cfg.stream = 0;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 2;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, kc_cluster_scale, (const float *)din, dout, n, 1.5f));
    g_launches++;
    std::vector<float> out = dcopy_back(dout, n);
    for (int i = 0; i < n; i++) expect(out[i] == hin[i] * 1.5f, "kc_cluster_scale", (size_t)i);
    fnv(out.data(), out.size() * sizeof(float));
    CK(cudaFree(din));
    CK(cudaFree(dout));
  }

  // 6. cudaLaunchCooperativeKernel with grid.sync().
  {
    int coop = 0;
    CK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    if (!coop) {
      fprintf(stderr, "device does not support cooperative launches\n");
      return 3;
    }
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kc_coop_reduce, 256, 0));
    int blocks = per_sm * prop.multiProcessorCount;
    if (blocks > 64) blocks = 64;
    if (blocks < 1) {
      fprintf(stderr, "kc_coop_reduce cannot be resident\n");
      return 3;
    }
    const int n = 1 << 20;
    std::vector<int> hin(n);
    long long expect_total = 0;
    for (int i = 0; i < n; i++) hin[i] = (int)(mix((unsigned)i) % 2001) - 1000, expect_total += hin[i];
    int *din = dalloc_copy(hin);
    long long *dpartial = nullptr, *dtotal = nullptr;
    CK(cudaMalloc(&dpartial, 64 * sizeof(long long)));
    CK(cudaMalloc(&dtotal, sizeof(long long)));
    const int *cin = din;
    int nn = n;
    void *args[] = {(void *)&cin, (void *)&dpartial, (void *)&dtotal, (void *)&nn};
    CK(cudaLaunchCooperativeKernel((const void *)kc_coop_reduce, dim3(blocks), dim3(256), args, 0, 0));
    g_launches++;
    long long total = 0;
    CK(cudaMemcpy(&total, dtotal, sizeof total, cudaMemcpyDeviceToHost));
    expect(total == expect_total, "kc_coop_reduce", 0);
    fnv(&total, sizeof total);
    CK(cudaFree(din));
    CK(cudaFree(dpartial));
    CK(cudaFree(dtotal));
  }

  // 7. the driver API on a CUfunction: the linked cuLaunchKernel symbol with
  // kernelParams, then cuLaunchKernel from cudaGetDriverEntryPointByVersion
  // with the `extra` parameter buffer.
  {
    const int n = 3333;
    std::vector<int> h(n);
    for (int i = 0; i < n; i++) h[i] = i * 3 - 1000;
    int *d = dalloc_copy(h);
    cudaFunction_t fn = nullptr;
    CK(cudaGetFuncBySymbol(&fn, (const void *)kc_driver_inc));
    int nn = n, d1 = 5;
    void *params[] = {(void *)&d, (void *)&nn, (void *)&d1};
    CKD(cuLaunchKernel((CUfunction)fn, (n + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr));
    g_launches++;

    void *entry = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    CK(cudaGetDriverEntryPointByVersion("cuLaunchKernel", &entry, 12000, cudaEnableDefault, &q));
    if (!entry || q != cudaDriverEntryPointSuccess) {
      fprintf(stderr, "cudaGetDriverEntryPointByVersion(cuLaunchKernel) failed\n");
      return 3;
    }
    typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  unsigned, unsigned, CUstream, void **, void **);
    // Packed layout of (int*, int, int): 8 + 4 + 4 bytes.
    struct {
      int *p;
      int n;
      int d;
    } packed = {d, n, 11};
    size_t packed_size = sizeof packed;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE,
                     &packed_size, CU_LAUNCH_PARAM_END};
    CKD(((launch_fn)entry)((CUfunction)fn, (n + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, nullptr,
                           extra));
    g_launches++;
    std::vector<int> out = dcopy_back(d, n);
    for (int i = 0; i < n; i++) expect(out[i] == h[i] + 16, "kc_driver_inc", (size_t)i);
    fnv(out.data(), out.size() * sizeof(int));
    CK(cudaFree(d));
  }

  CK(cudaDeviceSynchronize());
  printf("LAUNCHES %ld\n", g_launches);
  printf("CHECKSUM %016llx\n", (unsigned long long)g_fnv);
  if (g_failures) {
    fprintf(stderr, "FAILED: %d mismatching elements\n", g_failures);
    return 1;
  }
  printf("OK\n");
  return 0;
}
