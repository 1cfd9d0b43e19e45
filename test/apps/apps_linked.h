/* test/apps/apps_linked.h — what apps.h asks of an application linked with
 * -lcuda (direct calls into the exported driver symbols): how to name an
 * error and how to launch through the per-thread-default-stream entry.
 * Included after apps.h; the application still names itself (app_name). */
#ifndef APPS_LINKED_H
#define APPS_LINKED_H

#include "apps.h"

/* Exported by libcuda; cuda.h declares it only for per-thread builds. */
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
                             void **extra);

static const char *app_err_name(CUresult r) {
  const char *s = NULL;
  return cuGetErrorName(r, &s) == CUDA_SUCCESS && s ? s : "unknown CUresult";
}

static CUresult app_launch_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
                                void **extra) {
  return cuLaunchKernel_ptsz(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

#endif
