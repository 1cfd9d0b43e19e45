/* libkcheck/exec/san_route.h — the Compute Sanitizer route: kcheck's own
 * copy of a SASS-only kernel (Triton cubins, ATen, cuBLAS), loaded as a
 * second module from the image's bytes and patched with kcheck's device
 * callbacks (libkcheck/exec/kernels/san_patches.cu) so that shadow runs
 * can log accesses and delay warps without PTX. The application's own
 * module is never patched and never runs the callbacks.
 *
 * libsanitizer-public.so is dlopen'ed at the first use (never a link-time
 * dependency); when it cannot be loaded or initialised, or the process
 * already runs under compute-sanitizer (one Sanitizer API client per
 * process), the route stands down and says why. */
#ifndef KC_SAN_ROUTE_H
#define KC_SAN_ROUTE_H

#include <cuda.h>
#include <stdint.h>

#include "kernel.h"

/* Whether the route can run (initialising it at the first ask): 0, or -1
 * with *why. */
int kc_san_available(const char **why);
/* The route's state for the report: "initialised in N ms from PATH", or
 * why it is unavailable ("" before the first ask). */
const char *kc_san_state(void);

/* The patched copy of kernel k in the current context. *fn_pc: the
 * function's first instruction (records' pc minus it is the SASS offset);
 * names/nvars: its module variables (malloc'd, freed by the caller);
 * *ms: loading and patching time; device_bound: the most device memory
 * the load may have taken (devmem.h), kept on failure too. 0, or -1 with
 * *why. */
struct kc_san_module {
  CUmodule mod;
  CUfunction fn;
  uint64_t fn_pc;
  char (*names)[128];
  int nvars;
  double load_ms, patch_ms;
  uint64_t device_bound;
};
int kc_san_load(const struct kc_kernel *k, struct kc_san_module *m, const char **why);
/* The first instruction of function name in mod (0 while unknown, e.g.
 * not loaded yet under lazy loading: offsets then read as absolute pcs). */
uint64_t kc_san_fn_pc(CUmodule mod, const char *name);
/* Every later launch of the copy's fn passes cfg (device memory) to the
 * callbacks as userdata. 0, or -1 with *why. */
int kc_san_set_data(CUfunction fn, CUdeviceptr cfg, const char **why);

/* The cubin the device runs for k (its image copied, the SASS for the
 * current device taken out of a fatbin): malloc'd, *len bytes; NULL with
 * *why. Needs no Sanitizer API (the atomics classification reads it). */
char *kc_san_cubin(const struct kc_kernel *k, size_t *len, const char **why);
/* sanitizer=2: initialise at start-up, before the application's first
 * module loads (for measuring whether the API needs it). */
void kc_san_start_early(void);

#endif
