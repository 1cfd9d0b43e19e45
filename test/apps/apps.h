/* test/apps/apps.h — the work shared by the C test applications: the code
 * image, error checks, and scenarios written against the plain cuda.h names.
 * app_linked.c compiles them as direct calls into libcuda; app_runtime.c
 * first redefines every name to a pointer fetched by cuGetProcAddress. */
#ifndef APPS_H
#define APPS_H

#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakecuda.h"

/* The app supplies these: how to name an error, how to launch through the
 * per-thread-default-stream entry, and the name printed in messages. */
static const char *app_err_name(CUresult r);
static CUresult app_launch_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
                                void **extra);
static const char *app_name;

#define CK(call)                                                                                   \
  do {                                                                                             \
    CUresult ck_r_ = (call);                                                                       \
    if (ck_r_ != CUDA_SUCCESS) {                                                                   \
      fprintf(stderr, "%s: %s:%d: %s failed: %s (%d)\n", app_name, __FILE__, __LINE__, #call,      \
              app_err_name(ck_r_), (int)ck_r_);                                                    \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#define EXPECT(cond, ...)                                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s: %s:%d: check failed: ", app_name, __FILE__, __LINE__);                  \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
      app_failures++;                                                                              \
    }                                                                                              \
  } while (0)

static int app_failures;

/* A PTX-like image: the stand-in binds each `.entry` to its C kernel. */
static const char app_ptx[] =
    "//\n// kcheck test applications: kernels for the CPU stand-in driver\n//\n"
    ".version 8.5\n.target sm_90\n.address_size 64\n\n"
    ".visible .entry _Z6vecaddPKfS0_Pfi(.param .u64 a, .param .u64 b, .param .u64 c, "
    ".param .u32 n)\n{\n\tret;\n}\n"
    ".visible .entry _Z5scalePffi(.param .u64 x, .param .f32 s, .param .u32 n)\n{\n\tret;\n}\n"
    ".visible .entry _Z8fill_i32Piii(.param .u64 out, .param .u32 v, .param .u32 n)\n{\n\tret;\n}\n"
    ".visible .entry _Z13ti_add_kernel8TIParams(.param .align 8 .b8 p[1048])\n{\n\tret;\n}\n"
    ".visible .entry "
    "_ZN2fk29vectorized_elementwise_kernelILi4ENS_6MulAddIfEESt5arrayIPcLm3EEEEviT0_T1_("
    ".param .u32 n, .param .align 4 .b8 f[8], .param .align 8 .b8 data[24])\n{\n\tret;\n}\n"
    ".visible .entry _Z11last_writerPi(.param .u64 out)\n{\n\tret;\n}\n"
    ".visible .entry _Z13neighbor_readPiS_i(.param .u64 buf, .param .u64 out, .param .u32 n)\n"
    "{\n\tret;\n}\n"
    /* Bodies where kcheck reads them (the nondeterminism gate's atomics;
     * the stand-in runs its C kernel whatever the body says). */
    ".visible .entry _Z11float_accumPKfPfi(.param .u64 x, .param .u64 sum, .param .u32 n)\n"
    "{\n\t.reg .b64 %rd<2>;\n\t.reg .f32 %f<2>;\n"
    "\tld.param.u64 %rd1, [sum];\n\tred.global.add.f32 [%rd1], %f1;\n\tret;\n}\n"
    ".visible .entry _Z13uninit_sharedPj(.param .u64 out)\n{\n\tret;\n}\n"
    ".visible .entry _Z14block_disjointPi(.param .u64 out)\n{\n\tret;\n}\n"
    ".visible .entry _Z9multi_ptr11MultiParams(.param .align 8 .b8 p[600])\n{\n\tret;\n}\n"
    ".visible .entry _Z10atomic_sumPKiPyi(.param .u64 x, .param .u64 sum, .param .u32 n)\n"
    "{\n\t.reg .b64 %rd<3>;\n"
    "\tld.param.u64 %rd1, [sum];\n\tred.global.add.u64 [%rd1], %rd2;\n\tret;\n}\n"
    ".visible .entry _Z14shared_reversePKiPi(.param .u64 in, .param .u64 out)\n{\n\tret;\n}\n"
    ".visible .entry _Z14tail_unwrittenPKfPfi(.param .u64 a, .param .u64 out, .param .u32 n)\n"
    "{\n\tret;\n}\n"
    ".visible .entry _Z13input_scratchPfS_i(.param .u64 x, .param .u64 out, .param .u32 n)\n"
    "{\n\tret;\n}\n"
    ".visible .entry _Z14oob_tail_writePKfPfi(.param .u64 a, .param .u64 out, .param .u32 n)\n"
    "{\n\tret;\n}\n"
    ".visible .entry _Z14exp_fast_wrongPKfPfi(.param .u64 x, .param .u64 out, .param .u32 n)\n"
    "{\n\tret;\n}\n"
    ".visible .entry _Z11exp_correctPKfPfi(.param .u64 x, .param .u64 out, .param .u32 n)\n"
    "{\n\tret;\n}\n"
    ".visible .entry _Z12exp_inf_zeroPKfPfi(.param .u64 x, .param .u64 out, .param .u32 n)\n"
    "{\n\tret;\n}\n"
    ".visible .entry _Z12gemm_fp16accPKfS0_Pfiii(.param .u64 A, .param .u64 B, .param .u64 C, "
    ".param .u32 M, .param .u32 N, .param .u32 K)\n{\n\tret;\n}\n"
    ".visible .entry _Z12gemm_fp32accPKfS0_Pfiii(.param .u64 A, .param .u64 B, .param .u64 C, "
    ".param .u32 M, .param .u32 N, .param .u32 K)\n{\n\tret;\n}\n"
    ".visible .entry _Z12rowmax_fmaxfPKfPfii(.param .u64 x, .param .u64 out, .param .u32 rows, "
    ".param .u32 cols)\n{\n\tret;\n}\n"
    ".visible .entry _Z6rowmaxPKfPfii(.param .u64 x, .param .u64 out, .param .u32 rows, "
    ".param .u32 cols)\n{\n\tret;\n}\n"
    ".visible .entry _Z13tiled_add_bugPKfS0_Pfi(.param .u64 a, .param .u64 b, .param .u64 out, "
    ".param .u32 n)\n{\n\tret;\n}\n"
    ".visible .entry _Z13softmax_nomaxPKfPfii(.param .u64 x, .param .u64 y, .param .u32 rows, "
    ".param .u32 cols)\n{\n\tret;\n}\n"
    ".visible .entry _Z12softmax_rowsPKfPfii(.param .u64 x, .param .u64 y, .param .u32 rows, "
    ".param .u32 cols)\n{\n\tret;\n}\n"
    ".visible .entry _Z17layernorm_onepassPKfPfiif(.param .u64 x, .param .u64 y, "
    ".param .u32 rows, .param .u32 cols, .param .f32 eps)\n{\n\tret;\n}\n"
    ".visible .entry _Z17layernorm_twopassPKfPfiif(.param .u64 x, .param .u64 y, "
    ".param .u32 rows, .param .u32 cols, .param .f32 eps)\n{\n\tret;\n}\n";

static uint64_t fnv1a(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

struct app {
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUlibrary lib;
  CUstream stream;
};

/* APP_IMAGE=FILE: the module's code is FILE's bytes, loaded from memory as
 * Triton loads a cubin (the stand-in binds an ELF's .text.NAME sections);
 * kcheck sees no PTX in it. Otherwise app_ptx. */
static void *app_image;

static void app_load_module(struct app *a) {
  const char *path = getenv("APP_IMAGE");
  if (!path || !*path) {
    CK(cuModuleLoadData(&a->mod, app_ptx));
    return;
  }
  FILE *f = fopen(path, "rb");
  EXPECT(f != NULL, "cannot open APP_IMAGE %s", path);
  if (!f) exit(1);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  app_image = malloc(n > 0 ? (size_t)n : 1);
  EXPECT(app_image && n > 0 && fread(app_image, 1, (size_t)n, f) == (size_t)n, "reading %s", path);
  fclose(f);
  CK(cuModuleLoadData(&a->mod, app_image));
}

static void app_setup(struct app *a) {
  int n, sms, major, minor, ver;
  char name[128];
  CK(cuInit(0));
  CK(cuDriverGetVersion(&ver));
  CK(cuDeviceGetCount(&n));
  EXPECT(n >= 1, "no device");
  CK(cuDeviceGet(&a->dev, 0));
  CK(cuDeviceGetName(name, sizeof name, a->dev));
  CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, a->dev));
  CK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, a->dev));
  CK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, a->dev));
  CK(cuDevicePrimaryCtxRetain(&a->ctx, a->dev));
  CK(cuCtxSetCurrent(a->ctx));
  app_load_module(a);
  CK(cuLibraryLoadData(&a->lib, app_ptx, NULL, NULL, 0, NULL, NULL, 0));
  CK(cuStreamCreate(&a->stream, CU_STREAM_NON_BLOCKING));
  printf("%s: device \"%s\" sm_%d%d, %d SMs, driver %d\n", app_name, name, major, minor, sms, ver);
}

static void app_teardown(struct app *a) {
  CK(cuStreamDestroy(a->stream));
  CK(cuLibraryUnload(a->lib));
  CK(cuModuleUnload(a->mod));
  free(app_image);
  app_image = NULL;
  CK(cuCtxSynchronize());
  CK(cuDevicePrimaryCtxRelease(a->dev));
}

static CUfunction app_func(struct app *a, const char *name) {
  CUfunction f;
  CK(cuModuleGetFunction(&f, a->mod, name));
  return f;
}

/* A CUkernel, launched as a CUfunction the way the CUDA runtime does. */
static CUfunction app_kernel(struct app *a, const char *name) {
  CUkernel k;
  CK(cuLibraryGetKernel(&k, a->lib, name));
  return (CUfunction)k;
}

static CUdeviceptr app_alloc(size_t n) {
  CUdeviceptr p;
  CK(cuMemAlloc(&p, n));
  return p;
}

#define N_ELEMS 1000

/* Elementwise kernels through every parameter-passing form. */
static void app_elementwise(struct app *a) {
  static float ha[N_ELEMS], hb[N_ELEMS], hc[N_ELEMS];
  static int hi[N_ELEMS];
  for (int i = 0; i < N_ELEMS; i++) {
    ha[i] = (float)i * 0.5f;
    hb[i] = (float)(N_ELEMS - i);
  }
  size_t bytes = sizeof ha;
  CUdeviceptr da = app_alloc(bytes), db = app_alloc(bytes), dc = app_alloc(bytes);
  CUdeviceptr di = app_alloc(sizeof hi);
  CK(cuMemcpyHtoD(da, ha, bytes));
  CK(cuMemcpyHtoD(db, hb, bytes));
  int n = N_ELEMS;
  unsigned blocks = (N_ELEMS + 127) / 128;

  /* 1. vecadd as CUfunction, kernelParams, legacy entry, NULL stream. */
  void *args[] = {&da, &db, &dc, &n};
  CK(cuLaunchKernel(app_func(a, FK_K_VECADD), blocks, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
  CK(cuMemcpyDtoH(hc, dc, bytes));
  for (int i = 0; i < N_ELEMS; i++)
    EXPECT(hc[i] == ha[i] + hb[i], "vecadd[%d] = %g", i, hc[i]);
  printf("%s: vecadd ok checksum %016llx\n", app_name, (unsigned long long)fnv1a(hc, bytes));

  /* 2. scale as a CUkernel through the per-thread entry, on a stream. */
  float s = 2.0f;
  void *sargs[] = {&dc, &s, &n};
  CK(app_launch_ptsz(app_kernel(a, FK_K_SCALE), blocks, 1, 1, 128, 1, 1, 0, a->stream, sargs,
                     NULL));
  CK(cuStreamSynchronize(a->stream));
  CK(cuMemcpyDtoH(hc, dc, bytes));
  for (int i = 0; i < N_ELEMS; i++)
    EXPECT(hc[i] == 2.0f * (ha[i] + hb[i]), "scale[%d] = %g", i, hc[i]);
  printf("%s: scale ok checksum %016llx\n", app_name, (unsigned long long)fnv1a(hc, bytes));

  /* 3. fill through the `extra` buffer form. */
  struct {
    CUdeviceptr out;
    int v, n;
  } buf = {di, 7, N_ELEMS};
  size_t bsz = sizeof buf;
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &bsz,
                   CU_LAUNCH_PARAM_END};
  CK(cuLaunchKernel(app_func(a, FK_K_FILL), blocks, 1, 1, 128, 1, 1, 0, a->stream, NULL, extra));
  CK(cuMemcpyDtoHAsync(hi, di, sizeof hi, a->stream));
  CK(cuStreamSynchronize(a->stream));
  for (int i = 0; i < N_ELEMS; i++)
    EXPECT(hi[i] == 7, "fill[%d] = %d", i, hi[i]);
  printf("%s: fill ok checksum %016llx\n", app_name, (unsigned long long)fnv1a(hi, sizeof hi));

  /* 4. one big struct parameter with pointers inside (TensorIterator-like). */
  struct fk_ti_params tp;
  memset(&tp, 0, sizeof tp);
  tp.n = N_ELEMS;
  tp.alpha = 3.0f;
  tp.out = (char *)(uintptr_t)dc;
  tp.a = (const char *)(uintptr_t)da;
  tp.b = (const char *)(uintptr_t)db;
  tp.elem_size = 4;
  for (int i = 0; i < 63; i++)
    tp.sizes[i] = i + 1;
  for (int i = 0; i < 62; i++)
    tp.strides[i] = 4 * (i + 1);
  void *targs[] = {&tp};
  CK(cuLaunchKernel(app_kernel(a, FK_K_TI_ADD), blocks, 1, 1, 128, 1, 1, 0, a->stream, targs,
                    NULL));
  CK(cuStreamSynchronize(a->stream));
  CK(cuMemcpyDtoH(hc, dc, bytes));
  for (int i = 0; i < N_ELEMS; i++)
    EXPECT(hc[i] == ha[i] + 3.0f * hb[i], "ti_add[%d] = %g", i, hc[i]);
  printf("%s: ti_add ok checksum %016llx\n", app_name, (unsigned long long)fnv1a(hc, bytes));

  /* 5. std::array<char*,3>-like parameter, cuLaunchKernelEx with attributes. */
  struct fk_muladd f = {0.5f, -1.0f};
  char *data[3] = {(char *)(uintptr_t)dc, (char *)(uintptr_t)da, (char *)(uintptr_t)db};
  void *vargs[] = {&n, &f, data};
  CUlaunchAttribute attrs[2];
  memset(attrs, 0, sizeof attrs);
  attrs[0].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  attrs[0].value.priority = 0;
  attrs[1].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attrs[1].value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = blocks;
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 128;
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = a->stream;
  cfg.attrs = attrs;
  cfg.numAttrs = 2;
  CK(cuLaunchKernelEx(&cfg, app_func(a, FK_K_VEC_ELEM), vargs, NULL));
  CK(cuStreamSynchronize(a->stream));
  CK(cuMemcpyDtoH(hc, dc, bytes));
  for (int i = 0; i < N_ELEMS; i++)
    EXPECT(hc[i] == 0.5f * ha[i] - hb[i], "vec_elem[%d] = %g", i, hc[i]);
  printf("%s: vec_elem ok checksum %016llx\n", app_name, (unsigned long long)fnv1a(hc, bytes));

  /* 6. cooperative launch (all blocks co-resident). */
  CK(cuLaunchCooperativeKernel(app_func(a, FK_K_VECADD), blocks, 1, 1, 128, 1, 1, 0, a->stream,
                               args));
  CK(cuStreamSynchronize(a->stream));
  CK(cuMemcpyDtoH(hc, dc, bytes));
  for (int i = 0; i < N_ELEMS; i++)
    EXPECT(hc[i] == ha[i] + hb[i], "coop[%d] = %g", i, hc[i]);
  printf("%s: cooperative ok checksum %016llx\n", app_name, (unsigned long long)fnv1a(hc, bytes));

  CK(cuMemFree(da));
  CK(cuMemFree(db));
  CK(cuMemFree(dc));
  CK(cuMemFree(di));
}

/* A launch captured into a graph runs only when the graph is launched. */
static void app_graph(struct app *a) {
  static float h[N_ELEMS];
  for (int i = 0; i < N_ELEMS; i++)
    h[i] = (float)i;
  CUdeviceptr d = app_alloc(sizeof h);
  CK(cuMemcpyHtoD(d, h, sizeof h));
  int n = N_ELEMS;
  float s = 3.0f;
  void *args[] = {&d, &s, &n};
  CUstreamCaptureStatus st;
  CUgraph g;
  CUgraphExec ge;
  CK(cuStreamBeginCapture(a->stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CK(cuStreamIsCapturing(a->stream, &st));
  EXPECT(st == CU_STREAM_CAPTURE_STATUS_ACTIVE, "capture status %d", (int)st);
  CK(cuLaunchKernel(app_func(a, FK_K_SCALE), (N_ELEMS + 255) / 256, 1, 1, 256, 1, 1, 0, a->stream,
                    args, NULL));
  s = 100.0f; /* parameters were copied at capture: this must not matter */
  CK(cuStreamEndCapture(a->stream, &g));
  CK(cuStreamIsCapturing(a->stream, &st));
  EXPECT(st == CU_STREAM_CAPTURE_STATUS_NONE, "capture status after end %d", (int)st);
  CK(cuMemcpyDtoH(h, d, sizeof h));
  EXPECT(h[5] == 5.0f, "captured launch ran during capture: %g", h[5]);
  CK(cuGraphInstantiateWithFlags(&ge, g, 0));
  CK(cuGraphLaunch(ge, a->stream));
  CK(cuGraphLaunch(ge, a->stream));
  CK(cuStreamSynchronize(a->stream));
  CK(cuMemcpyDtoH(h, d, sizeof h));
  for (int i = 0; i < N_ELEMS; i++)
    EXPECT(h[i] == 9.0f * (float)i, "graph[%d] = %g", i, h[i]);
  printf("%s: graph ok checksum %016llx\n", app_name, (unsigned long long)fnv1a(h, sizeof h));
  CK(cuGraphExecDestroy(ge));
  CK(cuGraphDestroy(g));
  CK(cuMemFree(d));
}

/* The planted race and clean kernels, once each; prints one checksum per
 * kernel and checks the clean ones (kcheck's shadow tests run this). */
static void app_races(struct app *a) {
  enum { B = 64, T = 128, NT = B * T };
  static int hi[NT], hbuf[B], hout[B];
  static float hx[NT];
  static unsigned hu[8 * 256];
  CUdeviceptr d_i = app_alloc(sizeof hi), d_buf = app_alloc(sizeof hbuf);
  CUdeviceptr d_out = app_alloc(sizeof hout), d_x = app_alloc(sizeof hx);
  CUdeviceptr d_f = app_alloc(sizeof(float)), d_u = app_alloc(sizeof hu);
  CUdeviceptr d_sum = app_alloc(sizeof(unsigned long long)), d_in = app_alloc(sizeof hi);
  int n = B, nt = NT;
  float fsum;
  unsigned long long isum;

  /* last writer wins across blocks */
  CK(cuMemsetD32(d_out, 0xffffffffu, 1));
  void *a1[] = {&d_out};
  CK(cuLaunchKernel(app_func(a, FK_K_LAST_WRITER), B, 1, 1, T, 1, 1, 0, a->stream, a1, NULL));
  CK(cuStreamSynchronize(a->stream));
  CK(cuMemcpyDtoH(hout, d_out, sizeof(int)));
  EXPECT(hout[0] >= 0 && hout[0] < B, "last_writer wrote %d", hout[0]);
  printf("%s: races last_writer %d\n", app_name, hout[0]);

  /* reads another block's output */
  CK(cuMemsetD32(d_buf, 0, B));
  CK(cuMemsetD32(d_out, 0, B));
  void *a2[] = {&d_buf, &d_out, &n};
  CK(cuLaunchKernel(app_func(a, FK_K_NEIGHBOR), B, 1, 1, T, 1, 1, 0, a->stream, a2, NULL));
  CK(cuStreamSynchronize(a->stream));
  CK(cuMemcpyDtoH(hout, d_out, sizeof hout));
  printf("%s: races neighbor_read %016llx\n", app_name,
         (unsigned long long)fnv1a(hout, sizeof hout));

  /* float accumulation in block order, mixed magnitudes */
  for (int i = 0; i < NT; i++) {
    int blk = i / T;
    hx[i] = (blk % 3 == 0) ? 1562500.0f : (blk % 3 == 1 ? 0.37f : -1562500.0f);
  }
  CK(cuMemcpyHtoD(d_x, hx, sizeof hx));
  CK(cuMemsetD32(d_f, 0, 1));
  void *a3[] = {&d_x, &d_f, &nt};
  CK(cuLaunchKernel(app_func(a, FK_K_FLOAT_ACCUM), B, 1, 1, T, 1, 1, 0, a->stream, a3, NULL));
  CK(cuStreamSynchronize(a->stream));
  CK(cuMemcpyDtoH(&fsum, d_f, sizeof fsum));
  printf("%s: races float_accum %a\n", app_name, (double)fsum);

  /* reads never-written shared memory */
  void *a4[] = {&d_u};
  CK(cuLaunchKernel(app_func(a, FK_K_UNINIT_SHARED), 8, 1, 1, 256, 1, 1, 0, a->stream, a4, NULL));
  CK(cuStreamSynchronize(a->stream));
  CK(cuMemcpyDtoH(hu, d_u, sizeof hu));
  printf("%s: races uninit_shared %016llx\n", app_name, (unsigned long long)fnv1a(hu, sizeof hu));

  /* clean: disjoint per-block writes */
  void *a5[] = {&d_i};
  CK(cuLaunchKernel(app_func(a, FK_K_DISJOINT), B, 1, 1, T, 1, 1, 0, a->stream, a5, NULL));
  CK(cuStreamSynchronize(a->stream));
  CK(cuMemcpyDtoH(hi, d_i, sizeof hi));
  for (int i = 0; i < NT; i++)
    EXPECT(hi[i] == i * 3 + 1, "disjoint[%d] = %d", i, hi[i]);
  printf("%s: clean block_disjoint %016llx\n", app_name, (unsigned long long)fnv1a(hi, sizeof hi));

  /* clean: integer sum with atomics */
  for (int i = 0; i < NT; i++)
    hi[i] = (i % 7) - 3 + (i % 1000) * 1000;
  long long want = 0;
  for (int i = 0; i < NT; i++)
    want += hi[i];
  CK(cuMemcpyHtoD(d_in, hi, sizeof hi));
  CK(cuMemsetD8(d_sum, 0, sizeof isum));
  void *a6[] = {&d_in, &d_sum, &nt};
  CK(cuLaunchKernel(app_func(a, FK_K_ATOMIC_SUM), B, 1, 1, T, 1, 1, 0, a->stream, a6, NULL));
  CK(cuStreamSynchronize(a->stream));
  CK(cuMemcpyDtoH(&isum, d_sum, sizeof isum));
  EXPECT((long long)isum == want, "atomic_sum %lld want %lld", (long long)isum, want);
  printf("%s: clean atomic_sum %lld\n", app_name, (long long)isum);

  /* clean: reversal through dynamic shared memory */
  void *a7[] = {&d_in, &d_i};
  CK(cuLaunchKernel(app_func(a, FK_K_SHARED_REV), B, 1, 1, T, 1, 1, T * 4, a->stream, a7, NULL));
  CK(cuStreamSynchronize(a->stream));
  static int hr[NT];
  CK(cuMemcpyDtoH(hr, d_i, sizeof hr));
  for (int i = 0; i < NT; i++) {
    int blk = i / T, t = i % T;
    EXPECT(hr[i] == hi[blk * T + (T - 1 - t)], "shared_reverse[%d] = %d", i, hr[i]);
  }
  printf("%s: clean shared_reverse %016llx\n", app_name, (unsigned long long)fnv1a(hr, sizeof hr));

  CUdeviceptr all[] = {d_i, d_buf, d_out, d_x, d_f, d_u, d_sum, d_in};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    CK(cuMemFree(all[i]));
}

/* Bugs that only kcheck's generated inputs or shapes show (the nonfinite,
 * precision, extremes and shapes gates), each next to its correct
 * counterpart, on data where both agree: tiled_add_bug at n = 1024 (a
 * multiple of its 64-element tile; vecadd is its counterpart), and on a
 * 16 x 1000 row-major array (one block per row) rowmax_fmaxf / rowmax
 * (no NaN), softmax_nomax / softmax_rows (logits in [-2, 2]) and
 * layernorm_onepass / layernorm_twopass (rows with mean near 0). da, db
 * and dout hold at least 1024 floats; ha and hb are da's and db's data. */
static void app_contracts_adversarial(struct app *a, const float *ha, const float *hb,
                                      CUdeviceptr da, CUdeviceptr db, CUdeviceptr dout) {
  enum { TN = 1024, ROWS = 16, COLS = 1000 };
  static float hout[TN], hx[ROWS * COLS], hy[ROWS * COLS];
  int n = TN;
  CK(cuMemcpyHtoD(da, ha, sizeof(float) * TN));
  CK(cuMemcpyHtoD(db, hb, sizeof(float) * TN));
  void *targs[] = {&da, &db, &dout, &n};
  CK(cuLaunchKernel(app_func(a, FK_K_TILED_ADD_BUG), TN / 128, 1, 1, 128, 1, 1, 0, a->stream, targs,
                    NULL));
  CK(cuStreamSynchronize(a->stream));
  CK(cuMemcpyDtoH(hout, dout, sizeof hout));
  for (int i = 0; i < TN; i++)
    EXPECT(hout[i] == ha[i] + hb[i], "tiled_add_bug[%d] = %g", i, hout[i]);
  printf("%s: contracts tiled_add_bug out %016llx\n", app_name,
         (unsigned long long)fnv1a(hout, sizeof hout));

  CUdeviceptr dx = app_alloc(sizeof hx), dy = app_alloc(sizeof hy);
  int rows = ROWS, cols = COLS;
  float eps = 1e-5f;
  void *rargs[] = {&dx, &dy, &rows, &cols, &eps};
  static const struct {
    const char *label, *kernel;
    int data;       /* 0 rowmax, 1 softmax, 2 layernorm */
    size_t outputs; /* elements of y */
  } ks[] = {{"rowmax_fmaxf", FK_K_ROWMAX_FMAXF, 0, ROWS},
            {"rowmax", FK_K_ROWMAX, 0, ROWS},
            {"softmax_nomax", FK_K_SOFTMAX_NOMAX, 1, ROWS * COLS},
            {"softmax_rows", FK_K_SOFTMAX_ROWS, 1, ROWS * COLS},
            {"layernorm_onepass", FK_K_LAYERNORM_ONEPASS, 2, ROWS * COLS},
            {"layernorm_twopass", FK_K_LAYERNORM_TWOPASS, 2, ROWS * COLS}};
  for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++) {
    for (int r = 0; r < ROWS; r++)
      for (int c = 0; c < COLS; c++) {
        float *x = &hx[r * COLS + c];
        if (ks[k].data == 0) /* distinct values in [-5, 5], max anywhere in the row */
          *x = (float)((r * 131 + c * 37) % 1009) / 100.0f - 5.0f;
        else if (ks[k].data == 1) /* logits in [-2, 2] */
          *x = -2.0f + 4.0f * (float)((r * 7 + c * 13) % 1000) / 999.0f;
        else /* in [-2, 2], mean near 0 */
          *x = (float)((r * 17 + c * 29) % 201 - 100) / 50.0f;
      }
    CK(cuMemcpyHtoD(dx, hx, sizeof hx));
    CK(cuMemsetD32(dy, 0, ROWS * COLS));
    CK(cuLaunchKernel(app_func(a, ks[k].kernel), ROWS, 1, 1, 128, 1, 1, 0, a->stream, rargs, NULL));
    CK(cuStreamSynchronize(a->stream));
    CK(cuMemcpyDtoH(hy, dy, sizeof hy));
    for (int r = 0; r < ROWS; r++) { /* the planted bugs do not show on these inputs */
      const float *x = &hx[r * COLS], *y = &hy[r * COLS];
      double s = 0, s2 = 0;
      float m = x[0];
      for (int c = 0; c < COLS; c++) {
        m = x[c] > m ? x[c] : m;
        s += y[c];
        s2 += (double)y[c] * y[c];
      }
      if (ks[k].data == 0)
        EXPECT(hy[r] == m, "%s[%d] = %g, max %g", ks[k].label, r, (double)hy[r], (double)m);
      else if (ks[k].data == 1)
        EXPECT(s > 0.9999 && s < 1.0001, "%s row %d sums to %g", ks[k].label, r, s);
      else
        EXPECT(s / COLS < 1e-4 && s / COLS > -1e-4 && s2 / COLS > 0.999 && s2 / COLS < 1.001,
               "%s row %d: mean %g, variance %g", ks[k].label, r, s / COLS, s2 / COLS);
    }
    printf("%s: contracts %s out %016llx y[0] %g\n", app_name, ks[k].label,
           (unsigned long long)fnv1a(hy, sizeof(float) * ks[k].outputs), (double)hy[0]);
  }
  CK(cuMemFree(dx));
  CK(cuMemFree(dy));
}

/* The planted contract bugs and their correct counterpart (vecadd), once
 * each at n = 1000 (not a multiple of 128), the numerical ones (exp, GEMM),
 * those of app_contracts_adversarial, plus fill_i32, which has no
 * contract. Prints every output and input buffer's checksum: kcheck must
 * leave them exactly as without it. Buffers have 128 spare elements so the
 * out-of-bounds kernel's stray store stays inside the allocation. */
static void app_contracts(struct app *a) {
  enum { N = 1000, PAD = 128 };
  static float ha[N + PAD], hb[N + PAD], hout[N + PAD];
  static int hi[N];
  size_t bytes = sizeof ha;
  for (int i = 0; i < N + PAD; i++) {
    ha[i] = (float)i * 0.25f;
    hb[i] = (float)(3 * i + 1);
  }
  CUdeviceptr da = app_alloc(bytes), db = app_alloc(bytes), dout = app_alloc(bytes);
  CUdeviceptr di = app_alloc(sizeof hi);
  int n = N;
  unsigned blocks = (N + 127) / 128;
  struct {
    const char *label, *kernel;
    CUdeviceptr *x, *y, *out; /* y NULL: (x, out, n) */
  } ks[] = {{"vecadd", FK_K_VECADD, &da, &db, &dout},
            {"tail_unwritten", FK_K_TAIL_UNWRITTEN, &da, NULL, &dout},
            {"input_scratch", FK_K_INPUT_SCRATCH, &da, NULL, &dout},
            {"oob_tail_write", FK_K_OOB_TAIL_WRITE, &db, NULL, &dout}};
  for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++) {
    CK(cuMemcpyHtoD(da, ha, bytes));
    CK(cuMemcpyHtoD(db, hb, bytes));
    CK(cuMemsetD32(dout, 0, N + PAD));
    void *a3[] = {ks[k].x, ks[k].out, &n}, *a4[] = {ks[k].x, ks[k].y, ks[k].out, &n};
    CK(cuLaunchKernel(app_func(a, ks[k].kernel), blocks, 1, 1, 128, 1, 1, 0, a->stream,
                      ks[k].y ? a4 : a3, NULL));
    CK(cuStreamSynchronize(a->stream));
    CK(cuMemcpyDtoH(hout, dout, bytes));
    printf("%s: contracts %s out %016llx out[0] %g out[%d] %g out[%d] %g", app_name, ks[k].label,
           (unsigned long long)fnv1a(hout, bytes), (double)hout[0], N - 1, (double)hout[N - 1], N,
           (double)hout[N]);
    CK(cuMemcpyDtoH(hout, *ks[k].x, bytes));
    printf(" in %016llx\n", (unsigned long long)fnv1a(hout, bytes));
  }
  /* Numerical kernels (the oracle gate): exp on n points of [-8, 8]. */
  for (int i = 0; i < N; i++)
    ha[i] = -8.0f + 16.0f * (float)i / (float)(N - 1);
  CK(cuMemcpyHtoD(da, ha, bytes));
  const char *exps[][2] = {{"exp_fast_wrong", FK_K_EXP_FAST_WRONG},
                           {"exp_correct", FK_K_EXP_CORRECT}};
  for (size_t k = 0; k < 2; k++) {
    void *args[] = {&da, &dout, &n};
    CK(cuLaunchKernel(app_func(a, exps[k][1]), blocks, 1, 1, 128, 1, 1, 0, a->stream, args, NULL));
    CK(cuStreamSynchronize(a->stream));
    CK(cuMemcpyDtoH(hout, dout, sizeof(float) * N));
    printf("%s: contracts %s out %016llx\n", app_name, exps[k][0],
           (unsigned long long)fnv1a(hout, sizeof(float) * N));
  }
  /* GEMM 64x64x256, positive bf16-exact inputs (1 + j/16): sums near 600,
   * where an fp16 accumulator's ulp (0.5) swamps the products' 1/256. */
  enum { GM = 64, GN = 64, GK = 256 };
  static float hA[GM * GK], hB[GK * GN], hC[GM * GN];
  for (int i = 0; i < GM * GK; i++)
    hA[i] = 1.0f + (float)((i * 7) % 16) / 16.0f;
  for (int i = 0; i < GK * GN; i++)
    hB[i] = 1.0f + (float)((i * 5 + 3) % 16) / 16.0f;
  CUdeviceptr dA = app_alloc(sizeof hA), dB = app_alloc(sizeof hB), dC = app_alloc(sizeof hC);
  CK(cuMemcpyHtoD(dA, hA, sizeof hA));
  CK(cuMemcpyHtoD(dB, hB, sizeof hB));
  int gm = GM, gn = GN, gk = GK;
  const char *gemms[][2] = {{"gemm_fp16acc", FK_K_GEMM_FP16ACC},
                            {"gemm_fp32acc", FK_K_GEMM_FP32ACC}};
  for (size_t k = 0; k < 2; k++) {
    void *args[] = {&dA, &dB, &dC, &gm, &gn, &gk};
    CK(cuLaunchKernel(app_func(a, gemms[k][1]), GM * GN / 128, 1, 1, 128, 1, 1, 0, a->stream, args,
                      NULL));
    CK(cuStreamSynchronize(a->stream));
    CK(cuMemcpyDtoH(hC, dC, sizeof hC));
    printf("%s: contracts %s out %016llx C[0] %g\n", app_name, gemms[k][0],
           (unsigned long long)fnv1a(hC, sizeof hC), (double)hC[0]);
  }
  CUdeviceptr g[] = {dA, dB, dC};
  for (size_t i = 0; i < 3; i++)
    CK(cuMemFree(g[i]));
  app_contracts_adversarial(a, ha, hb, da, db, dout);
  int v = 5;
  void *fa[] = {&di, &v, &n};
  CK(cuLaunchKernel(app_func(a, FK_K_FILL), blocks, 1, 1, 128, 1, 1, 0, a->stream, fa, NULL));
  CK(cuStreamSynchronize(a->stream));
  CK(cuMemcpyDtoH(hi, di, sizeof hi));
  printf("%s: contracts fill %016llx\n", app_name, (unsigned long long)fnv1a(hi, sizeof hi));
  CUdeviceptr all[] = {da, db, dout, di};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    CK(cuMemFree(all[i]));
}

/* Kernels on a vector (one row as the generators see it): exp_inf_zero,
 * wrong at +Inf only, and its correct twin exp_correct, on n points of
 * [-8, 8], where both give expf's values. */
static void app_vectors(struct app *a) {
  enum { N = 1000 };
  static float hx[N], hy[2][N];
  for (int i = 0; i < N; i++)
    hx[i] = -8.0f + 16.0f * (float)i / (float)(N - 1);
  CUdeviceptr dx = app_alloc(sizeof hx), dy = app_alloc(sizeof hx);
  CK(cuMemcpyHtoD(dx, hx, sizeof hx));
  int n = N;
  const char *ks[][2] = {{"exp_inf_zero", FK_K_EXP_INF_ZERO}, {"exp_correct", FK_K_EXP_CORRECT}};
  for (size_t k = 0; k < 2; k++) {
    void *args[] = {&dx, &dy, &n};
    CK(cuLaunchKernel(app_func(a, ks[k][1]), (N + 127) / 128, 1, 1, 128, 1, 1, 0, a->stream, args,
                      NULL));
    CK(cuStreamSynchronize(a->stream));
    CK(cuMemcpyDtoH(hy[k], dy, sizeof hy[k]));
    printf("%s: vectors %s out %016llx\n", app_name, ks[k][0],
           (unsigned long long)fnv1a(hy[k], sizeof hy[k]));
  }
  EXPECT(!memcmp(hy[0], hy[1], sizeof hy[0]), "exp_inf_zero differs from expf on finite inputs");
  CK(cuMemFree(dx));
  CK(cuMemFree(dy));
}

/* Runs the scenarios a mode asks for; returns the exit status. */
/* A training loop's shape: every step launches a kernel with a per-step
 * scalar (a learning-rate schedule) and one with constant arguments. */
static void app_steps(struct app *a, int steps) {
  static float hc[N_ELEMS];
  size_t bytes = sizeof hc;
  CUdeviceptr dc = app_alloc(bytes), da = app_alloc(bytes), db = app_alloc(bytes);
  CK(cuMemsetD8(dc, 0, bytes));
  CK(cuMemsetD8(da, 0, bytes));
  CK(cuMemsetD8(db, 0, bytes));
  int n = N_ELEMS;
  unsigned blocks = (N_ELEMS + 127) / 128;
  CUfunction scale = app_func(a, FK_K_SCALE), vecadd = app_func(a, FK_K_VECADD);
  for (int step = 1; step <= steps; step++) {
    float lr = 1e-3f / (float)step;
    void *sargs[] = {&dc, &lr, &n};
    CK(cuLaunchKernel(scale, blocks, 1, 1, 128, 1, 1, 0, NULL, sargs, NULL));
    void *vargs[] = {&da, &db, &dc, &n};
    CK(cuLaunchKernel(vecadd, blocks, 1, 1, 128, 1, 1, 0, NULL, vargs, NULL));
  }
  CK(cuCtxSynchronize());
  CK(cuMemcpyDtoH(hc, dc, bytes));
  for (int i = 0; i < N_ELEMS; i++)
    EXPECT(hc[i] == 0.0f, "steps: c[%d] = %g", i, hc[i]);
  printf("%s: steps %d ok\n", app_name, steps);
}

/* Memory nearly full (on the stand-in): after a checked launch on 4 MiB
 * buffers, one allocation of all but 16 MiB of the device. kcheck keeps its staging
 * buffer between checks; the application must still get its memory. */
static void app_bigalloc(struct app *a) {
  size_t bytes = 4u << 20;
  CUdeviceptr da = app_alloc(bytes), db = app_alloc(bytes), dc = app_alloc(bytes);
  CK(cuMemsetD8(da, 1, bytes));
  CK(cuMemsetD8(db, 2, bytes));
  int n = (int)(bytes / 4);
  void *args[] = {&da, &db, &dc, &n};
  CK(cuLaunchKernel(app_func(a, FK_K_VECADD), (unsigned)(n + 127) / 128, 1, 1, 128, 1, 1, 0, NULL,
                    args, NULL));
  CK(cuCtxSynchronize());
  /* The stand-in's device size (FAKECUDA_MEM_GB, 16 by default). */
  const char *gb = getenv("FAKECUDA_MEM_GB");
  size_t total_b = (size_t)(gb ? atoi(gb) : 16) << 30;
  CUdeviceptr big = 0;
  CUresult r = cuMemAlloc(&big, total_b - 3 * bytes - (16u << 20));
  EXPECT(r == CUDA_SUCCESS, "the large allocation failed: %s", app_err_name(r));
  if (r == CUDA_SUCCESS) CK(cuMemFree(big));
  printf("%s: bigalloc %s\n", app_name, r == CUDA_SUCCESS ? "ok" : "failed");
}

/* One launch reaching 70 allocations (more than one comparison launch
 * takes): even tensors written from odd ones; "many_racy" adds a last
 * writer in the last tensor, which only the second launch compares. */
static void app_many(struct app *a, int racy) {
  enum { COUNT = 70, NEL = 256 };
  static struct fk_multi_params p;
  static float h[NEL];
  memset(&p, 0, sizeof p);
  p.n = NEL, p.count = COUNT, p.racy = (unsigned long long)racy;
  for (int i = 0; i < COUNT; i++) {
    CUdeviceptr d = app_alloc(NEL * sizeof(float));
    for (int j = 0; j < NEL; j++)
      h[j] = (float)(i * 1000 + j);
    CK(cuMemcpyHtoD(d, h, sizeof h));
    p.t[i] = (float *)(uintptr_t)d;
  }
  void *args[] = {&p};
  CK(cuLaunchKernel(app_func(a, FK_K_MULTI_PTR), 8, 1, 1, 32, 1, 1, 0, a->stream, args, NULL));
  CK(cuStreamSynchronize(a->stream));
  int bad = 0;
  for (int i = 0; i < COUNT; i++) {
    CK(cuMemcpyDtoH(h, (CUdeviceptr)(uintptr_t)p.t[i], sizeof h));
    for (int j = 0; j < NEL; j++) {
      int written = i % 2 == 0 && i + 1 < COUNT - racy;
      float want = written ? 2.0f * (float)((i + 1) * 1000 + j) : (float)(i * 1000 + j);
      if (racy && i == COUNT - 1 && j == 0) {
        bad += !(h[0] >= 0 && h[0] < 8);
        continue;
      }
      bad += h[j] != want;
    }
  }
  EXPECT(bad == 0, "many: %d wrong element(s)", bad);
  printf("%s: many%s %d tensors\n", app_name, racy ? "_racy" : "", COUNT);
}

static int app_run(const char *mode) {
  struct app a;
  memset(&a, 0, sizeof a);
  app_setup(&a);
  if (strcmp(mode, "races") == 0) {
    app_races(&a);
  } else if (strcmp(mode, "basic") == 0) {
    app_elementwise(&a);
    app_graph(&a);
  } else if (strcmp(mode, "contracts") == 0) {
    app_contracts(&a);
  } else if (strcmp(mode, "vectors") == 0) {
    app_vectors(&a);
  } else if (strcmp(mode, "many") == 0 || strcmp(mode, "many_racy") == 0) {
    app_many(&a, mode[4] == '_');
  } else if (strcmp(mode, "bigalloc") == 0) {
    app_bigalloc(&a);
  } else if (strcmp(mode, "crash") == 0 || strcmp(mode, "abort") == 0) {
    /* Launches, then a segmentation fault or abort(): the report must keep
     * them. */
    app_elementwise(&a);
    printf("%s: crashing now\n", app_name);
    fflush(stdout);
    if (mode[0] == 'a') abort();
    int *volatile nowhere = NULL;
    /* cppcheck-suppress nullPointer ; the crash this mode exists for */
    *nowhere = 1;
  } else if (strncmp(mode, "steps", 5) == 0 && atoi(mode + 5) > 0) {
    app_steps(&a, atoi(mode + 5));
  } else if (strcmp(mode, "all") == 0) {
    app_elementwise(&a);
    app_graph(&a);
    app_races(&a);
  } else {
    fprintf(
        stderr,
        "%s: unknown mode '%s' (basic, races, contracts, vectors, many, many_racy, bigalloc, all, "
        "crash, abort, steps<N>)\n",
        app_name, mode);
    return 2;
  }
  app_teardown(&a);
  if (app_failures) {
    fprintf(stderr, "%s: %d check(s) failed\n", app_name, app_failures);
    return 1;
  }
  printf("%s: %s ok\n", app_name, mode);
  return 0;
}

#endif
