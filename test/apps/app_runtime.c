/* test/apps/app_runtime.c — a test application that reaches the driver the
 * way the CUDA runtime does: dlopen("libcuda.so.1"), dlsym of
 * cuGetProcAddress_v2 only, then every entry (cuGetProcAddress itself
 * included) fetched through it; cuLaunchKernel is fetched twice (default and
 * per-thread default stream) and both are used.
 * usage: app_runtime [basic|races|all] */
#include <dlfcn.h>

#include <cuda.h>

/* Every entry the scenarios call, by the base name the runtime asks for and
 * the version whose prototype cuda.h gives that name (cuCtxSynchronize at
 * 13000 would be the newer form taking a context). */
// clang-format off
#define APP_ENTRIES(X) \
  X(cuInit, CUDA_VERSION) \
  X(cuDriverGetVersion, CUDA_VERSION) \
  X(cuGetErrorName, CUDA_VERSION) \
  X(cuDeviceGetCount, CUDA_VERSION) \
  X(cuDeviceGet, CUDA_VERSION) \
  X(cuDeviceGetName, CUDA_VERSION) \
  X(cuDeviceGetAttribute, CUDA_VERSION) \
  X(cuDevicePrimaryCtxRetain, CUDA_VERSION) \
  X(cuDevicePrimaryCtxRelease, CUDA_VERSION) \
  X(cuCtxSetCurrent, CUDA_VERSION) \
  X(cuCtxSynchronize, 2000) \
  X(cuModuleLoadData, CUDA_VERSION) \
  X(cuModuleUnload, CUDA_VERSION) \
  X(cuModuleGetFunction, CUDA_VERSION) \
  X(cuLibraryLoadData, CUDA_VERSION) \
  X(cuLibraryUnload, CUDA_VERSION) \
  X(cuLibraryGetKernel, CUDA_VERSION) \
  X(cuStreamCreate, CUDA_VERSION) \
  X(cuStreamDestroy, CUDA_VERSION) \
  X(cuStreamSynchronize, CUDA_VERSION) \
  X(cuStreamBeginCapture, CUDA_VERSION) \
  X(cuStreamEndCapture, CUDA_VERSION) \
  X(cuStreamIsCapturing, CUDA_VERSION) \
  X(cuGraphInstantiateWithFlags, CUDA_VERSION) \
  X(cuGraphLaunch, CUDA_VERSION) \
  X(cuGraphExecDestroy, CUDA_VERSION) \
  X(cuGraphDestroy, CUDA_VERSION) \
  X(cuMemAlloc, CUDA_VERSION) \
  X(cuMemFree, CUDA_VERSION) \
  X(cuMemcpyHtoD, CUDA_VERSION) \
  X(cuMemcpyDtoH, CUDA_VERSION) \
  X(cuMemcpyDtoHAsync, CUDA_VERSION) \
  X(cuMemsetD8, CUDA_VERSION) \
  X(cuMemsetD32, CUDA_VERSION) \
  X(cuLaunchKernel, CUDA_VERSION) \
  X(cuLaunchKernelEx, CUDA_VERSION) \
  X(cuLaunchCooperativeKernel, CUDA_VERSION)
// clang-format on

/* Pointer types come from the prototypes cuda.h maps each name to
 * (cuMemAlloc -> cuMemAlloc_v2, ...), which is what version 13000 returns. */
static struct {
#define X(name, ver) __typeof__(name) *p_##name;
  APP_ENTRIES(X)
#undef X
  __typeof__(cuLaunchKernel) *p_launch_ptsz;
  __typeof__(cuGetProcAddress) *p_gpa;
} D;

/* From here on the scenarios' cuda.h names call the fetched pointers. */
#undef cuDevicePrimaryCtxRelease
#undef cuStreamDestroy
#undef cuStreamBeginCapture
#undef cuStreamEndCapture
#undef cuStreamIsCapturing
#undef cuStreamSynchronize
#undef cuGraphInstantiate
#undef cuGraphLaunch
#undef cuMemAlloc
#undef cuMemFree
#undef cuMemcpyHtoD
#undef cuMemcpyDtoH
#undef cuMemcpyDtoHAsync
#undef cuMemsetD8
#undef cuMemsetD32
#undef cuLaunchKernel
#undef cuLaunchKernelEx
#undef cuLaunchCooperativeKernel
#define cuInit D.p_cuInit
#define cuDriverGetVersion D.p_cuDriverGetVersion
#define cuGetErrorName D.p_cuGetErrorName
#define cuDeviceGetCount D.p_cuDeviceGetCount
#define cuDeviceGet D.p_cuDeviceGet
#define cuDeviceGetName D.p_cuDeviceGetName
#define cuDeviceGetAttribute D.p_cuDeviceGetAttribute
#define cuDevicePrimaryCtxRetain D.p_cuDevicePrimaryCtxRetain
#define cuDevicePrimaryCtxRelease D.p_cuDevicePrimaryCtxRelease
#define cuCtxSetCurrent D.p_cuCtxSetCurrent
#define cuCtxSynchronize D.p_cuCtxSynchronize
#define cuModuleLoadData D.p_cuModuleLoadData
#define cuModuleUnload D.p_cuModuleUnload
#define cuModuleGetFunction D.p_cuModuleGetFunction
#define cuLibraryLoadData D.p_cuLibraryLoadData
#define cuLibraryUnload D.p_cuLibraryUnload
#define cuLibraryGetKernel D.p_cuLibraryGetKernel
#define cuStreamCreate D.p_cuStreamCreate
#define cuStreamDestroy D.p_cuStreamDestroy
#define cuStreamSynchronize D.p_cuStreamSynchronize
#define cuStreamBeginCapture D.p_cuStreamBeginCapture
#define cuStreamEndCapture D.p_cuStreamEndCapture
#define cuStreamIsCapturing D.p_cuStreamIsCapturing
#define cuGraphInstantiateWithFlags D.p_cuGraphInstantiateWithFlags
#define cuGraphLaunch D.p_cuGraphLaunch
#define cuGraphExecDestroy D.p_cuGraphExecDestroy
#define cuGraphDestroy D.p_cuGraphDestroy
#define cuMemAlloc D.p_cuMemAlloc
#define cuMemFree D.p_cuMemFree
#define cuMemcpyHtoD D.p_cuMemcpyHtoD
#define cuMemcpyDtoH D.p_cuMemcpyDtoH
#define cuMemcpyDtoHAsync D.p_cuMemcpyDtoHAsync
#define cuMemsetD8 D.p_cuMemsetD8
#define cuMemsetD32 D.p_cuMemsetD32
#define cuLaunchKernel D.p_cuLaunchKernel
#define cuLaunchKernelEx D.p_cuLaunchKernelEx
#define cuLaunchCooperativeKernel D.p_cuLaunchCooperativeKernel

#include "apps.h"

static const char *app_name = "app_runtime";

static const char *app_err_name(CUresult r) {
  const char *s = NULL;
  if (D.p_cuGetErrorName && D.p_cuGetErrorName(r, &s) == CUDA_SUCCESS && s) return s;
  return "unknown CUresult";
}

static CUresult app_launch_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
                                void **extra) {
  return D.p_launch_ptsz(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

static void fetch(const char *name, void **slot, int version, cuuint64_t flags) {
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult r = D.p_gpa(name, slot, version, flags, &st);
  if (r != CUDA_SUCCESS || st != CU_GET_PROC_ADDRESS_SUCCESS || *slot == NULL) {
    fprintf(stderr,
            "app_runtime: cuGetProcAddress(\"%s\", %d, flags %llu) failed: %s (%d), "
            "status %d\n",
            name, version, (unsigned long long)flags, app_err_name(r), (int)r, (int)st);
    exit(1);
  }
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "basic";
  setvbuf(stdout, NULL, _IOLBF, 0);
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    fprintf(stderr, "app_runtime: dlopen(libcuda.so.1): %s\n", dlerror());
    return 1;
  }
  void *boot = dlsym(h, "cuGetProcAddress_v2");
  if (boot == NULL) {
    fprintf(stderr, "app_runtime: dlsym(cuGetProcAddress_v2): %s\n", dlerror());
    return 1;
  }
  D.p_gpa = (__typeof__(D.p_gpa))boot;
  /* The runtime re-fetches cuGetProcAddress and uses that one afterwards. */
  void *gpa = NULL;
  fetch("cuGetProcAddress", &gpa, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT);
  D.p_gpa = (__typeof__(D.p_gpa))gpa;
#define X(name, ver) fetch(#name, (void **)&D.p_##name, ver, CU_GET_PROC_ADDRESS_DEFAULT);
  APP_ENTRIES(X)
#undef X
  fetch("cuLaunchKernel", (void **)&D.p_launch_ptsz, CUDA_VERSION,
        CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  if ((void *)D.p_launch_ptsz == (void *)D.p_cuLaunchKernel) {
    fprintf(stderr, "app_runtime: per-thread cuLaunchKernel is the legacy entry\n");
    return 1;
  }
  return app_run(mode);
}
