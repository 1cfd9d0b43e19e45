/* test/fakecuda/selftest.c — tests of the CPU stand-in driver alone (no
 * kcheck): entry coverage of libkcheck/base/driver.def, cuGetProcAddress
 * semantics, CUkernel vs CUfunction handles, memory queries, capture rules,
 * and the execution model: same order under same conditions, a different
 * order for order-dependent kernels (never for clean ones) under green
 * contexts, extra shared memory, an occupier and the shared-memory scrub;
 * and that the planted numerical and shape bugs are real: each differs from
 * its correct counterpart on the inputs or shape that expose it, and agrees
 * with it on ordinary ones.
 * usage: fakecuda_selftest [all|faultcheck|threads|forkinit] */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>

#include "fakecuda.h"

#undef cuGetProcAddress
CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags);

static int failures, checks;
static const char *app_name = "fakecuda_selftest";

#define T(cond)                                                                                    \
  do {                                                                                             \
    checks++;                                                                                      \
    if (!(cond)) {                                                                                 \
      failures++;                                                                                  \
      fprintf(stderr, "%s: %s:%d: FAIL: %s\n", app_name, __FILE__, __LINE__, #cond);               \
    }                                                                                              \
  } while (0)
#define TR(call, want) T((call) == (want))
#define OK(call) TR(call, CUDA_SUCCESS)

/* kcheck's own image, as kcheck would load it. */
static const char kc_ptx[] =
    ".version 8.5\n.target sm_90\n.address_size 64\n"
    ".visible .entry kc_scrub_shared(.param .u64 seed)\n{\n\tret;\n}\n"
    ".visible .entry kc_occupier(.param .u64 release, .param .u64 seed, .param .u64 max_ns)\n"
    "{\n\tret;\n}\n"
    ".visible .entry kc_not_implemented_here(.param .u64 x)\n{\n\tret;\n}\n";

static const char test_ptx[] =
    ".version 8.5\n.target sm_90\n"
    ".visible .entry _Z6vecaddPKfS0_Pfi(.param .u64 a)\n{ret;}\n"
    ".visible .entry _Z11last_writerPi(.param .u64 a)\n{ret;}\n"
    ".visible .entry _Z13neighbor_readPiS_i(.param .u64 a)\n{ret;}\n"
    ".visible .entry _Z11float_accumPKfPfi(.param .u64 a)\n{ret;}\n"
    ".visible .entry _Z13uninit_sharedPj(.param .u64 a)\n{ret;}\n"
    ".visible .entry _Z14block_disjointPi(.param .u64 a)\n{ret;}\n"
    ".visible .entry _Z10atomic_sumPKiPyi(.param .u64 a)\n{ret;}\n"
    ".visible .entry _Z14shared_reversePKiPi(.param .u64 a)\n{ret;}\n"
    ".visible .entry _Z13ti_add_kernel8TIParams(.param .align 8 .b8 p[1048])\n{ret;}\n"
    ".visible .entry "
    "_ZN2fk29vectorized_elementwise_kernelILi4ENS_6MulAddIfEESt5arrayIPcLm3EEEEviT0_T1_"
    "(.param .u32 n)\n{ret;}\n"
    ".visible .entry _Z12rowmax_fmaxfPKfPfii(.param .u64 a)\n{ret;}\n"
    ".visible .entry _Z6rowmaxPKfPfii(.param .u64 a)\n{ret;}\n"
    ".visible .entry _Z13tiled_add_bugPKfS0_Pfi(.param .u64 a)\n{ret;}\n"
    ".visible .entry _Z13softmax_nomaxPKfPfii(.param .u64 a)\n{ret;}\n"
    ".visible .entry _Z12softmax_rowsPKfPfii(.param .u64 a)\n{ret;}\n"
    ".visible .entry _Z17layernorm_onepassPKfPfiif(.param .u64 a)\n{ret;}\n"
    ".visible .entry _Z17layernorm_twopassPKfPfiif(.param .u64 a)\n{ret;}\n";

static CUmodule mod, kcmod;
static CUlibrary lib;
static CUcontext pctx;

static CUfunction fn(const char *name) {
  CUfunction f = NULL;
  OK(cuModuleGetFunction(&f, mod, name));
  return f;
}

/* -------------------------------------------------------- before cuInit */

static void test_before_init(void) {
  CUdevice d;
  int v;
  void *p = NULL;
  TR(cuDeviceGet(&d, 0), CUDA_ERROR_NOT_INITIALIZED);
  OK(cuDriverGetVersion(&v));
  T(v == 13000);
  OK(cuGetProcAddress_v2("cuInit", &p, 13000, 0, NULL));
  T(p != NULL);
}

/* ---------------------------------------------- coverage and proc table */

static const char *const def_names[] = {
#define KC_HOOK(sym, fam) #sym,
#define KC_CALL(sym) #sym,
#include "driver.def"
#undef KC_HOOK
#undef KC_CALL
};

/* "cuMemAlloc_v2" -> "cuMemAlloc"; "cuLaunchKernel_ptsz" -> per-thread. */
static void base_name(const char *sym, char *out, size_t n, int *ptds) {
  snprintf(out, n, "%s", sym);
  size_t l = strlen(out);
  *ptds = 0;
  if (l > 5 && (strcmp(out + l - 5, "_ptsz") == 0 || strcmp(out + l - 5, "_ptds") == 0)) {
    out[l - 5] = 0;
    l -= 5;
    *ptds = 1;
  }
  if (l > 3 && out[l - 3] == '_' && out[l - 2] == 'v' && out[l - 1] >= '2' && out[l - 1] <= '9')
    out[l - 3] = 0;
}

static void test_procs(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  T(h != NULL);
  if (h == NULL) return;
  static const int versions[] = {2000,  3020,  4000,  7000,  9020,  10000, 10010, 11000,
                                 11030, 11060, 12000, 12040, 12050, 12080, 13000};
  for (size_t i = 0; i < sizeof def_names / sizeof def_names[0]; i++) {
    void *sym = dlsym(h, def_names[i]);
    if (sym == NULL) {
      fprintf(stderr, "%s: driver.def entry %s is not exported\n", app_name, def_names[i]);
      failures++;
      continue;
    }
    char base[128];
    int ptds, found = 0;
    base_name(def_names[i], base, sizeof base, &ptds);
    for (size_t k = 0; k < sizeof versions / sizeof versions[0] && !found; k++) {
      void *p = NULL;
      CUdriverProcAddressQueryResult st;
      if (cuGetProcAddress_v2(base, &p, versions[k],
                              ptds ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0,
                              &st) == CUDA_SUCCESS)
        found = p == sym;
    }
    if (!found) {
      fprintf(stderr, "%s: cuGetProcAddress(\"%s\") never gives %s\n", app_name, base,
              def_names[i]);
      failures++;
    }
    checks++;
  }

  void *p = NULL, *q = NULL;
  CUdriverProcAddressQueryResult st = 99;
  OK(cuGetProcAddress_v2("cuLaunchKernel", &p, 13000, 0, &st));
  T(p == dlsym(h, "cuLaunchKernel") && st == CU_GET_PROC_ADDRESS_SUCCESS);
  OK(cuGetProcAddress_v2("cuLaunchKernel", &q, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                         &st));
  T(q == dlsym(h, "cuLaunchKernel_ptsz") && q != p);
  OK(cuGetProcAddress_v2("cuMemAlloc", &p, 3020, 0, &st));
  T(p == dlsym(h, "cuMemAlloc_v2"));
  TR(cuGetProcAddress_v2("cuMemAlloc", &p, 2000, 0, &st), CUDA_ERROR_NOT_FOUND);
  T(st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT && p == NULL);
  TR(cuGetProcAddress_v2("cuNoSuchEntry", &p, 13000, 0, &st), CUDA_ERROR_NOT_FOUND);
  T(st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND && p == NULL);
  OK(cuGetProcAddress_v2("cuGetProcAddress", &p, 12000, 0, &st));
  T(p == dlsym(h, "cuGetProcAddress_v2"));
  OK(cuGetProcAddress("cuGetProcAddress", &p, 11030, 0));
  T(p == dlsym(h, "cuGetProcAddress"));
  OK(cuGetProcAddress_v2("cuMemcpyHtoD", &p, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                         &st));
  T(p == dlsym(h, "cuMemcpyHtoD_v2_ptds"));
  OK(cuGetProcAddress_v2("cuStreamBeginCapture", &p, 12000, 0, &st));
  T(p == dlsym(h, "cuStreamBeginCapture_v2"));
  OK(cuGetProcAddress_v2("cuCtxCreate", &p, 13000, 0, &st));
  T(p == dlsym(h, "cuCtxCreate_v4"));
  TR(cuGetProcAddress_v2("cuInit", &p, 13000, 4, &st), CUDA_ERROR_INVALID_VALUE);
  dlclose(h);
}

/* ------------------------------------------------- handles and params */

static void test_handles(void) {
  CUkernel k;
  CUfunction f, kf;
  const char *name;
  size_t off, size;
  CUmodule m;
  CUlibrary l;

  OK(cuLibraryGetKernel(&k, lib, FK_K_VEC_ELEM));
  f = fn(FK_K_VEC_ELEM);
  /* CUkernel handles are rejected by the CUfunction entries. */
  TR(cuFuncGetName(&name, (CUfunction)k), CUDA_ERROR_INVALID_HANDLE);
  TR(cuFuncGetParamInfo((CUfunction)k, 0, &off, &size), CUDA_ERROR_INVALID_HANDLE);
  TR(cuFuncGetModule(&m, (CUfunction)k), CUDA_ERROR_INVALID_HANDLE);
  TR(cuKernelGetName(&name, (CUkernel)f), CUDA_ERROR_INVALID_HANDLE);
  OK(cuKernelGetName(&name, k));
  T(strcmp(name, FK_K_VEC_ELEM) == 0);
  OK(cuFuncGetName(&name, f));
  T(strcmp(name, FK_K_VEC_ELEM) == 0);
  OK(cuFuncGetModule(&m, f));
  T(m == mod);
  OK(cuKernelGetLibrary(&l, k));
  T(l == lib);
  OK(cuKernelGetFunction(&kf, k));
  OK(cuFuncGetName(&name, kf));
  T(strcmp(name, FK_K_VEC_ELEM) == 0);
  /* int, MulAdd<float> (align 4), std::array<char*,3> (align 8) */
  static const size_t want_off[] = {0, 4, 16}, want_size[] = {4, 8, 24};
  for (size_t i = 0; i < 3; i++) {
    OK(cuKernelGetParamInfo(k, i, &off, &size));
    T(off == want_off[i] && size == want_size[i]);
    OK(cuFuncGetParamInfo(f, i, &off, &size));
    T(off == want_off[i] && size == want_size[i]);
  }
  TR(cuKernelGetParamInfo(k, 3, &off, &size), CUDA_ERROR_INVALID_VALUE);
  TR(cuFuncGetParamInfo(f, 3, &off, &size), CUDA_ERROR_INVALID_VALUE);
  OK(cuFuncGetParamInfo(fn(FK_K_TI_ADD), 0, &off, &size));
  T(off == 0 && size == 1048);
  OK(cuFuncGetParamInfo(fn(FK_K_VECADD), 3, &off, &size));
  T(off == 24 && size == 4);
  TR(cuModuleGetFunction(&f, kcmod, "kc_not_implemented_here"), CUDA_ERROR_NOT_FOUND);
  TR(cuModuleGetFunction(&f, mod, "nope"), CUDA_ERROR_NOT_FOUND);

  /* Launching a CUkernel cast to CUfunction works. */
  enum { N = 300 };
  float ha[N], hb[N], hc[N];
  for (int i = 0; i < N; i++)
    ha[i] = (float)i, hb[i] = 1.0f;
  CUdeviceptr da, db, dc;
  OK(cuMemAlloc(&da, sizeof ha));
  OK(cuMemAlloc(&db, sizeof hb));
  OK(cuMemAlloc(&dc, sizeof hc));
  OK(cuMemcpyHtoD(da, ha, sizeof ha));
  OK(cuMemcpyHtoD(db, hb, sizeof hb));
  CUkernel kv;
  OK(cuLibraryGetKernel(&kv, lib, FK_K_VECADD));
  int n = N;
  void *args[] = {&da, &db, &dc, &n};
  OK(cuLaunchKernel((CUfunction)kv, 3, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
  OK(cuMemcpyDtoH(hc, dc, sizeof hc));
  int good = 1;
  for (int i = 0; i < N; i++)
    good &= hc[i] == (float)i + 1.0f;
  T(good);
  /* bad configurations */
  TR(cuLaunchKernel((CUfunction)kv, 3, 1, 1, 2048, 1, 1, 0, NULL, args, NULL),
     CUDA_ERROR_INVALID_VALUE);
  TR(cuLaunchKernel((CUfunction)kv, 3, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL),
     CUDA_ERROR_INVALID_VALUE);
  TR(cuLaunchKernel((CUfunction)kv, 3, 1, 1, 128, 1, 1, 65536, NULL, args, NULL),
     CUDA_ERROR_INVALID_VALUE);
  OK(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536, kv, 0));
  OK(cuLaunchKernel((CUfunction)kv, 3, 1, 1, 128, 1, 1, 65536, NULL, args, NULL));
  TR(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 232449, kv, 0),
     CUDA_ERROR_INVALID_VALUE);
  TR(cuLaunchCooperativeKernel(fn(FK_K_VECADD), 132 * 16 + 1, 1, 1, 128, 1, 1, 0, NULL, args),
     CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  TR(cuLaunchKernel((CUfunction)&n, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL),
     CUDA_ERROR_INVALID_HANDLE);
  OK(cuMemFree(da));
  OK(cuMemFree(db));
  OK(cuMemFree(dc));
}

/* ---------------------------------------------------------------- memory */

static void test_memory(void) {
  CUdeviceptr d, base;
  size_t size;
  OK(cuMemAlloc(&d, 1000));
  T(d % 256 == 0 && d >= 0x100000000ull);
  OK(cuMemGetAddressRange(&base, &size, d + 999));
  T(base == d && size == 1000);
  TR(cuMemGetAddressRange(&base, &size, d + 1000), CUDA_ERROR_NOT_FOUND);
  CUdeviceptr rs = 0;
  size_t rz = 0;
  int ord = -1;
  unsigned mt = 0;
  CUcontext c = NULL;
  OK(cuPointerGetAttribute(&rs, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, d + 17));
  OK(cuPointerGetAttribute(&rz, CU_POINTER_ATTRIBUTE_RANGE_SIZE, d + 17));
  OK(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, d + 17));
  OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 17));
  OK(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, d + 17));
  T(rs == d && rz == 1000 && ord == 0 && mt == CU_MEMORYTYPE_DEVICE && c == pctx);
  int host = 0;
  TR(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)&host),
     CUDA_ERROR_INVALID_VALUE);
  char hbuf[16];
  TR(cuMemcpyHtoD((CUdeviceptr)hbuf, "x", 1), CUDA_ERROR_INVALID_VALUE);
  TR(cuMemcpyDtoH(hbuf, d + 990, 16), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemFree(d));
  TR(cuMemFree(d), CUDA_ERROR_INVALID_VALUE);
  TR(cuPointerGetAttribute(&rs, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, d),
     CUDA_ERROR_INVALID_VALUE);

  /* VMM: reserve 4 MiB, map two 2 MiB chunks. */
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t gran;
  OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  T(gran == 2u << 20);
  CUdeviceptr va;
  CUmemGenericAllocationHandle h1, h2;
  OK(cuMemAddressReserve(&va, 2 * gran, 0, 0, 0));
  OK(cuMemCreate(&h1, gran, &prop, 0));
  OK(cuMemCreate(&h2, gran, &prop, 0));
  OK(cuMemMap(va, gran, 0, h1, 0));
  OK(cuMemMap(va + gran, gran, 0, h2, 0));
  TR(cuMemcpyHtoD(va, "abc", 4), CUDA_ERROR_INVALID_VALUE); /* no access yet */
  CUmemAccessDesc acc = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  OK(cuMemSetAccess(va, 2 * gran, &acc, 1));
  OK(cuMemcpyHtoD(va + gran - 2, "abc", 4));
  OK(cuMemcpyDtoH(hbuf, va + gran - 2, 4));
  T(strcmp(hbuf, "abc") == 0);
  OK(cuPointerGetAttribute(&rs, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, va + gran + 5));
  OK(cuPointerGetAttribute(&rz, CU_POINTER_ATTRIBUTE_RANGE_SIZE, va + gran + 5));
  T(rs == va && rz == 2 * gran);
  OK(cuMemGetAddressRange(&base, &size, va + gran + 5));
  T(base == va + gran && size == gran);
  OK(cuMemUnmap(va, 2 * gran));
  OK(cuMemRelease(h1));
  OK(cuMemRelease(h2));
  OK(cuMemAddressFree(va, 2 * gran));

  CUstream s;
  OK(cuStreamCreate(&s, 0));
  OK(cuMemAllocAsync(&d, 64, s));
  OK(cuMemGetAddressRange(&base, &size, d));
  T(size == 64);
  OK(cuMemFreeAsync(d, s));
  OK(cuStreamDestroy(s));
  TR(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
}

/* ---------------------------------------------------------------- capture */

static void test_capture(void) {
  CUstream s;
  CUgraph g;
  CUstreamCaptureStatus st;
  CUdeviceptr d;
  int v = -1;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuMemAlloc(&d, 4));
  OK(cuMemsetD32(d, 7, 1));
  void *args[] = {&d};
  OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  OK(cuLaunchKernel(fn(FK_K_LAST_WRITER), 4, 1, 1, 32, 1, 1, 0, s, args, NULL));
  OK(cuStreamIsCapturing(s, &st));
  T(st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  TR(cuStreamIsCapturing(NULL, &st), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  TR(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  OK(cuStreamIsCapturing(s, &st));
  T(st == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  TR(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  OK(cuMemcpyDtoH(&v, d, 4));
  T(v == 7); /* nothing ran */

  CUgraphExec ge;
  OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  OK(cuLaunchKernel(fn(FK_K_LAST_WRITER), 4, 1, 1, 32, 1, 1, 0, s, args, NULL));
  OK(cuStreamEndCapture(s, &g));
  OK(cuMemcpyDtoH(&v, d, 4));
  T(v == 7);
  OK(cuGraphInstantiateWithFlags(&ge, g, 0));
  OK(cuGraphLaunch(ge, s));
  OK(cuMemcpyDtoH(&v, d, 4));
  T(v >= 0 && v < 4);
  OK(cuGraphExecDestroy(ge));
  OK(cuGraphDestroy(g));
  OK(cuMemFree(d));
  OK(cuStreamDestroy(s));
}

/* ------------------------------------------------------ execution order */

enum { RB = 256, RT = 64 };

/* Results of one run of each planted kernel, as bytes to compare. */
struct results {
  int last;
  int neighbor[RB];
  float accum;
  int disjoint[RB * RT];
  unsigned long long isum;
  int rev[RB * RT];
};

static CUdeviceptr r_out, r_buf, r_x, r_f, r_i, r_in, r_sum;

static void results_alloc(void) {
  static float hx[RB * RT];
  static int hin[RB * RT];
  for (int i = 0; i < RB * RT; i++) {
    int b = i / RT;
    hx[i] = b % 3 == 0 ? 1562500.0f : (b % 3 == 1 ? 0.37f : -1562500.0f);
    hin[i] = i * 7 - 5;
  }
  OK(cuMemAlloc(&r_out, sizeof(int)));
  OK(cuMemAlloc(&r_buf, RB * sizeof(int)));
  OK(cuMemAlloc(&r_x, sizeof hx));
  OK(cuMemAlloc(&r_f, sizeof(float)));
  OK(cuMemAlloc(&r_i, sizeof hin));
  OK(cuMemAlloc(&r_in, sizeof hin));
  OK(cuMemAlloc(&r_sum, 8));
  OK(cuMemcpyHtoD(r_x, hx, sizeof hx));
  OK(cuMemcpyHtoD(r_in, hin, sizeof hin));
}

/* Runs every planted kernel on stream s with `extra` bytes of additional
 * dynamic shared memory. */
static void run_all(CUstream s, unsigned extra, struct results *r) {
  int n = RB, nt = RB * RT;
  CUdeviceptr out2;
  OK(cuMemAlloc(&out2, RB * sizeof(int)));
  OK(cuMemsetD32(r_out, 0xffffffffu, 1));
  OK(cuMemsetD32(r_buf, 0, RB));
  OK(cuMemsetD32(out2, 0, RB));
  OK(cuMemsetD32(r_f, 0, 1));
  OK(cuMemsetD8(r_sum, 0, 8));
  OK(cuMemsetD32(r_i, 0, RB * RT));
  void *a1[] = {&r_out}, *a2[] = {&r_buf, &out2, &n}, *a3[] = {&r_x, &r_f, &nt};
  void *a5[] = {&r_i}, *a6[] = {&r_in, &r_sum, &nt};
  OK(cuLaunchKernel(fn(FK_K_LAST_WRITER), RB, 1, 1, RT, 1, 1, extra, s, a1, NULL));
  OK(cuLaunchKernel(fn(FK_K_NEIGHBOR), RB, 1, 1, RT, 1, 1, extra, s, a2, NULL));
  OK(cuLaunchKernel(fn(FK_K_FLOAT_ACCUM), RB, 1, 1, RT, 1, 1, extra, s, a3, NULL));
  OK(cuLaunchKernel(fn(FK_K_DISJOINT), RB, 1, 1, RT, 1, 1, extra, s, a5, NULL));
  OK(cuLaunchKernel(fn(FK_K_ATOMIC_SUM), RB, 1, 1, RT, 1, 1, extra, s, a6, NULL));
  OK(cuStreamSynchronize(s));
  OK(cuMemcpyDtoH(&r->last, r_out, sizeof r->last));
  OK(cuMemcpyDtoH(r->neighbor, out2, sizeof r->neighbor));
  OK(cuMemcpyDtoH(&r->accum, r_f, sizeof r->accum));
  OK(cuMemcpyDtoH(r->disjoint, r_i, sizeof r->disjoint));
  OK(cuMemcpyDtoH(&r->isum, r_sum, sizeof r->isum));
  void *a7[] = {&r_in, &r_i};
  OK(cuLaunchKernel(fn(FK_K_SHARED_REV), RB, 1, 1, RT, 1, 1, RT * 4 + extra, s, a7, NULL));
  OK(cuStreamSynchronize(s));
  OK(cuMemcpyDtoH(r->rev, r_i, sizeof r->rev));
  OK(cuMemFree(out2));
}

/* Clean kernels must agree; returns how many order-dependent ones differ. */
static int compare(const char *what, const struct results *a, const struct results *b) {
  checks++;
  if (memcmp(a->disjoint, b->disjoint, sizeof a->disjoint) || a->isum != b->isum ||
      memcmp(a->rev, b->rev, sizeof a->rev)) {
    fprintf(stderr, "%s: FAIL: a clean kernel changed under %s\n", app_name, what);
    failures++;
  }
  int d = (a->last != b->last) + (memcmp(a->neighbor, b->neighbor, sizeof a->neighbor) != 0) +
          (memcmp(&a->accum, &b->accum, sizeof a->accum) != 0);
  printf("%s: %-28s last_writer %3d vs %3d, neighbor %s, float_accum %a vs %a\n", app_name, what,
         a->last, b->last,
         memcmp(a->neighbor, b->neighbor, sizeof a->neighbor) ? "differs" : "same",
         (double)a->accum, (double)b->accum);
  return d;
}

static CUfunction kfn(const char *name) {
  CUfunction f = NULL;
  OK(cuModuleGetFunction(&f, kcmod, name));
  return f;
}

static void test_order(void) {
  static struct results base, again, other;
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  results_alloc();
  run_all(s, 0, &base);
  run_all(s, 0, &again);
  T(compare("identical conditions", &base, &again) == 0);
  T(memcmp(&base, &again, sizeof base) == 0);

  /* Green context of 16 SMs. */
  CUdevResource all, groups[16], rest;
  unsigned ng = 16;
  CUdevResourceDesc desc;
  CUgreenCtx gctx;
  CUstream gs;
  OK(cuDeviceGetDevResource(0, &all, CU_DEV_RESOURCE_TYPE_SM));
  T(all.sm.smCount == 132);
  OK(cuDevSmResourceSplitByCount(groups, &ng, &all, &rest, 0, 16));
  T(ng == 8 && groups[1].sm.smCount == 16 && rest.sm.smCount == 4);
  OK(cuDevResourceGenerateDesc(&desc, &groups[1], 1));
  OK(cuGreenCtxCreate(&gctx, desc, 0, CU_GREEN_CTX_DEFAULT_STREAM));
  OK(cuGreenCtxStreamCreate(&gs, gctx, CU_STREAM_NON_BLOCKING, 0));
  CUcontext gc, sc;
  OK(cuCtxFromGreenCtx(&gc, gctx));
  OK(cuStreamGetCtx(gs, &sc));
  T(gc == sc && gc != pctx);
  run_all(gs, 0, &other);
  T(compare("green context, 16 SMs", &base, &other) == 3);
  run_all(gs, 0, &again);
  T(memcmp(&other, &again, sizeof other) == 0);
  OK(cuStreamDestroy(gs));
  OK(cuGreenCtxDestroy(gctx));

  /* Extra dynamic shared memory: needs the opt-in attribute first. */
  static const char *const names[] = {FK_K_LAST_WRITER, FK_K_NEIGHBOR,   FK_K_FLOAT_ACCUM,
                                      FK_K_DISJOINT,    FK_K_ATOMIC_SUM, FK_K_SHARED_REV};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    OK(cuFuncSetAttribute(fn(names[i]), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                          100 * 1024));
  run_all(s, 96 * 1024, &other);
  T(compare("+96 KiB dynamic shared", &base, &other) == 3);

  /* A resident occupier shifts the schedule until it is released. */
  CUstream os;
  CUdeviceptr flag;
  OK(cuStreamCreate(&os, CU_STREAM_NON_BLOCKING));
  OK(cuMemAlloc(&flag, 4));
  OK(cuMemsetD32(flag, 0, 1));
  unsigned long long seed = 12345, max_ns = 1000000;
  void *oa[] = {&flag, &seed, &max_ns};
  OK(cuLaunchKernel(kfn(FK_K_OCCUPIER), 100, 1, 1, 1024, 1, 1, 0, os, oa, NULL));
  run_all(s, 0, &other);
  T(compare("occupier on 100 SMs", &base, &other) == 3);
  OK(cuMemsetD32Async(flag, 1, 1, s)); /* release, as kcheck does */
  run_all(s, 0, &again);
  T(memcmp(&base, &again, sizeof base) == 0);
  OK(cuLaunchKernel(kfn(FK_K_OCCUPIER), 100, 1, 1, 1024, 1, 1, 0, os, oa, NULL));
  OK(cuStreamSynchronize(os)); /* a sync of its stream also ends it */
  run_all(s, 0, &again);
  T(memcmp(&base, &again, sizeof base) == 0);
  OK(cuMemFree(flag));
  OK(cuStreamDestroy(os));
  OK(cuStreamDestroy(s));
}

/* Never-written shared memory: stable on plain reruns, changed by a scrub. */
static void test_scrub(void) {
  enum { B = 8, TH = 256 };
  static unsigned a[B * TH], b[B * TH], c[B * TH], d[B * TH];
  CUdeviceptr out;
  OK(cuMemAlloc(&out, sizeof a));
  void *ua[] = {&out};
  CUfunction u = fn(FK_K_UNINIT_SHARED), scrub = kfn(FK_K_SCRUB);
  OK(cuLaunchKernel(u, B, 1, 1, TH, 1, 1, 0, NULL, ua, NULL));
  OK(cuMemcpyDtoH(a, out, sizeof a));
  OK(cuLaunchKernel(u, B, 1, 1, TH, 1, 1, 0, NULL, ua, NULL));
  OK(cuMemcpyDtoH(b, out, sizeof b));
  T(memcmp(a, b, sizeof a) == 0);
  unsigned dyn = 232448;
  OK(cuFuncSetAttribute(scrub, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)dyn));
  unsigned long long seed = 1;
  void *sa[] = {&seed};
  OK(cuLaunchKernel(scrub, 132, 1, 1, 1024, 1, 1, dyn, NULL, sa, NULL));
  OK(cuLaunchKernel(u, B, 1, 1, TH, 1, 1, 0, NULL, ua, NULL));
  OK(cuMemcpyDtoH(c, out, sizeof c));
  T(memcmp(a, c, sizeof a) != 0);
  seed = 2;
  OK(cuLaunchKernel(scrub, 132, 1, 1, 1024, 1, 1, dyn, NULL, sa, NULL));
  OK(cuLaunchKernel(u, B, 1, 1, TH, 1, 1, 0, NULL, ua, NULL));
  OK(cuMemcpyDtoH(d, out, sizeof d));
  T(memcmp(c, d, sizeof c) != 0);
  printf("%s: uninit_shared word 0: %08x plain, %08x scrub seed 1, %08x seed 2\n", app_name, a[0],
         c[0], d[0]);
  OK(cuMemFree(out));
}

/* Events read the simulated clock: more work, more time. */
static void test_events(void) {
  CUevent e0, e1;
  float ms = -1;
  OK(cuEventCreate(&e0, 0));
  OK(cuEventCreate(&e1, 0));
  TR(cuEventElapsedTime(&ms, e0, e1), CUDA_ERROR_INVALID_HANDLE);
  OK(cuEventRecord(e0, NULL));
  CUdeviceptr d;
  OK(cuMemAlloc(&d, 4 * 4096));
  void *a[] = {&d};
  OK(cuLaunchKernel(fn(FK_K_DISJOINT), 64, 1, 1, 64, 1, 1, 0, NULL, a, NULL));
  OK(cuEventRecord(e1, NULL));
  OK(cuEventSynchronize(e1));
  OK(cuEventElapsedTime(&ms, e0, e1));
  T(ms > 0);
  OK(cuEventDestroy(e0));
  OK(cuEventDestroy(e1));
  OK(cuMemFree(d));
}

/* ------------------------------------------ planted numerical bugs */

/* Runs row kernel k over rows x cols floats of host x into host y (grid,
 * block as given; eps is read by the layernorm kernels only). */
static void rows_run(const char *k, const float *x, float *y, size_t ny, int rows, int cols,
                     unsigned grid, unsigned block) {
  CUdeviceptr dx, dy;
  size_t nx = (size_t)rows * (size_t)cols;
  float eps = 1e-5f;
  OK(cuMemAlloc(&dx, nx * sizeof *x));
  OK(cuMemAlloc(&dy, ny * sizeof *y));
  OK(cuMemcpyHtoD(dx, x, nx * sizeof *x));
  OK(cuMemsetD32(dy, 0x7fc00000u, ny)); /* NaN: an unwritten output shows */
  void *args[] = {&dx, &dy, &rows, &cols, &eps};
  OK(cuLaunchKernel(fn(k), grid, 1, 1, block, 1, 1, 0, NULL, args, NULL));
  OK(cuMemcpyDtoH(y, dy, ny * sizeof *y));
  OK(cuMemFree(dx));
  OK(cuMemFree(dy));
}

static void test_planted_numerics(void) {
  /* max: a NaN in row 0 is dropped by fmaxf only; +0 beats -0 in both. */
  static const float mx[2][5] = {{1, NAN, 3, -2, 0}, {-0.0f, 0.0f, -1, -5, -0.0f}};
  float m[2], mf[2];
  rows_run(FK_K_ROWMAX, &mx[0][0], m, 2, 2, 5, 2, 128);
  rows_run(FK_K_ROWMAX_FMAXF, &mx[0][0], mf, 2, 2, 5, 1, 32); /* one block, both rows */
  T(isnan(m[0]) && mf[0] == 3.0f);
  T(m[1] == 0 && !signbit(m[1]) && mf[1] == 0 && !signbit(mf[1]));

  /* tiled add: right at n = 128 (whole tiles of 64), wrong in the partial
   * tile of n = 100; vecadd right at both, whatever the grid. */
  enum { TN = 128 };
  static float a[TN], b[TN], got[TN], want[TN];
  for (int i = 0; i < TN; i++) {
    a[i] = (float)i;
    b[i] = 1000.0f + 2.0f * (float)i;
    want[i] = a[i] + b[i];
  }
  CUdeviceptr da, db, dout;
  OK(cuMemAlloc(&da, sizeof a));
  OK(cuMemAlloc(&db, sizeof b));
  OK(cuMemAlloc(&dout, sizeof got));
  OK(cuMemcpyHtoD(da, a, sizeof a));
  OK(cuMemcpyHtoD(db, b, sizeof b));
  for (int n = 100; n <= TN; n += TN - 100) {
    for (int bug = 0; bug < 2; bug++) {
      void *args[] = {&da, &db, &dout, &n};
      OK(cuMemsetD32(dout, 0, TN));
      OK(cuLaunchKernel(fn(bug ? FK_K_TILED_ADD_BUG : FK_K_VECADD), 1, 1, 1, 128, 1, 1, 0, NULL,
                        args, NULL));
      OK(cuMemcpyDtoH(got, dout, sizeof got));
      int wrong = 0;
      for (int i = 0; i < n; i++)
        wrong += got[i] != want[i];
      T(wrong == (bug && n % 64 ? n % 64 : 0));
    }
  }
  /* a grid smaller than the data: the tiled kernel strides over it */
  int n = TN;
  void *targs[] = {&da, &db, &dout, &n};
  OK(cuMemsetD32(dout, 0, TN));
  OK(cuLaunchKernel(fn(FK_K_TILED_ADD_BUG), 1, 1, 1, 32, 1, 1, 0, NULL, targs, NULL));
  OK(cuMemcpyDtoH(got, dout, sizeof got));
  T(memcmp(got, want, sizeof got) == 0);
  OK(cuMemFree(da));
  OK(cuMemFree(db));
  OK(cuMemFree(dout));

  /* softmax: logits near 90 overflow exp unless the max is subtracted */
  static const float lx[2][4] = {{90, 80, 85, 0}, {1, -1, 0.5f, 2}};
  float y[8], yn[8];
  rows_run(FK_K_SOFTMAX_ROWS, &lx[0][0], y, 8, 2, 4, 2, 128);
  rows_run(FK_K_SOFTMAX_NOMAX, &lx[0][0], yn, 8, 2, 4, 2, 128);
  double y0 = 1 / (1 + exp(-10.0) + exp(-5.0) + exp(-90.0));
  T(fabs(y[0] - y0) < 1e-6 && isnan(yn[0]));
  for (int k = 4; k < 8; k++)
    T(fabs(y[k] - yn[k]) <= 1e-6 * y[k]);

  /* layernorm: mean 1000, sigma 1. One pass loses the variance; two pass
   * and, at mean 0, both give +-1/sqrt(1 + eps). */
  enum { LC = 1024 };
  static float lnx[2][LC], ly[2 * LC], lyo[2 * LC];
  for (int k = 0; k < LC; k++) {
    lnx[0][k] = 1000.0f + (k % 2 ? 1.0f : -1.0f);
    lnx[1][k] = k % 2 ? 1.0f : -1.0f;
  }
  rows_run(FK_K_LAYERNORM_TWOPASS, &lnx[0][0], ly, 2 * LC, 2, LC, 2, 128);
  rows_run(FK_K_LAYERNORM_ONEPASS, &lnx[0][0], lyo, 2 * LC, 2, LC, 2, 128);
  double want_ln = 1 / sqrt(1 + 1e-5), err2 = 0, err1 = 0, err1_row1 = 0;
  for (int k = 0; k < LC; k++) {
    double w = k % 2 ? want_ln : -want_ln;
    err2 = fmax(err2, fmax(fabs(ly[k] - w), fabs(ly[LC + k] - w)));
    err1 = fmax(err1, fabs(lyo[k] - w));
    err1_row1 = fmax(err1_row1, fabs(lyo[LC + k] - w));
  }
  T(err2 < 1e-5 && err1_row1 < 1e-5);
  T(err1 > 0.01);
}

/* --------------------------------------------------------------- modes */

/* Run with FAKECUDA_FAIL_ENTRY=cuMemAlloc_v2 FAKECUDA_FAIL_AT=2: the failed
 * call must leave its output alone. */
static int mode_faultcheck(void) {
  CUdeviceptr a = 0, b = 0xdeadbeef;
  OK(cuInit(0));
  OK(cuDevicePrimaryCtxRetain(&pctx, 0));
  OK(cuCtxSetCurrent(pctx));
  OK(cuMemAlloc(&a, 16));
  T(cuMemAlloc(&b, 16) != CUDA_SUCCESS);
  T(b == 0xdeadbeef);
  OK(cuMemAlloc(&b, 16));
  T(b != 0xdeadbeef && b != a);
  return failures != 0;
}

static void *thread_calls(void *arg) {
  (void)arg;
  int v;
  for (int i = 0; i < 10000; i++)
    cuDriverGetVersion(&v);
  return NULL;
}

/* 8 threads x 10000 counted calls, plus one cuInit: FAKECUDA_CALLS_OUT must
 * say 80001. */
static int mode_threads(void) {
  pthread_t t[8];
  OK(cuInit(0));
  for (int i = 0; i < 8; i++)
    pthread_create(&t[i], NULL, thread_calls, NULL);
  for (int i = 0; i < 8; i++)
    pthread_join(t[i], NULL);
  return failures != 0;
}

/* A child of an initialised process cannot use the driver. */
static int mode_forkinit(void) {
  OK(cuInit(0));
  OK(cuDevicePrimaryCtxRetain(&pctx, 0));
  pid_t p = fork();
  if (p == 0)
    _exit(cuInit(0) == CUDA_ERROR_NOT_INITIALIZED &&
                  cuCtxSetCurrent(pctx) == CUDA_ERROR_NOT_INITIALIZED
              ? 0
              : 1);
  int st;
  waitpid(p, &st, 0);
  T(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  OK(cuCtxSetCurrent(pctx));
  return failures != 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "all";
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (strcmp(mode, "faultcheck") == 0) return mode_faultcheck();
  if (strcmp(mode, "threads") == 0) return mode_threads();
  if (strcmp(mode, "forkinit") == 0) return mode_forkinit();
  if (strcmp(mode, "all") != 0) {
    fprintf(stderr, "usage: %s [all|faultcheck|threads|forkinit]\n", argv[0]);
    return 2;
  }
  test_before_init();
  OK(cuInit(0));
  OK(cuDevicePrimaryCtxRetain(&pctx, 0));
  TR(cuModuleLoadData(&mod, test_ptx), CUDA_ERROR_INVALID_CONTEXT);
  CUdeviceptr nop;
  TR(cuMemAlloc(&nop, 16), CUDA_ERROR_INVALID_CONTEXT);
  OK(cuCtxSetCurrent(pctx));
  OK(cuModuleLoadData(&mod, test_ptx));
  OK(cuModuleLoadData(&kcmod, kc_ptx));
  OK(cuLibraryLoadData(&lib, test_ptx, NULL, NULL, 0, NULL, NULL, 0));
  test_procs();
  test_handles();
  test_memory();
  test_capture();
  test_order();
  test_scrub();
  test_events();
  test_planted_numerics();
  OK(cuLibraryUnload(lib));
  OK(cuModuleUnload(mod));
  OK(cuModuleUnload(kcmod));
  printf("%s: %d checks, %d failed\n", app_name, checks, failures);
  return failures != 0;
}
