/* libkcheck/capture/kernel.h — what kcheck knows about each kernel it saw launched:
 * names, handle kind, image identity, parameter layout, eligibility. Built
 * on first sight (one `kernel` record), then found by handle. */
#ifndef KC_KERNEL_H
#define KC_KERNEL_H

#include <cuda.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define KC_MAX_PARAMS 1024

struct kc_kernel {
  void *handle; /* CUfunction or CUkernel, as passed to the launch */
  int id;
  int is_cukernel;  /* a CUkernel: cuFuncGet* fail on it, cuKernelGet* work */
  const char *name; /* mangled (as the driver reports it) */
  const char *demangled;
  void *image_handle; /* CUmodule or CUlibrary, NULL when unknown */
  int image_id;       /* -1 when the load was not seen */
  uint64_t image_hash;
  int nparams; /* -1 when the layout is unknown */
  uint32_t *param_offset;
  uint32_t *param_size;
  size_t param_bytes; /* end of the last parameter */
  int layout_tries;
  int eligible;      /* passes the include/exclude filters */
  int communication; /* NCCL-like: never re-run */
  /* Parameter words (offset / 8) a check saw write memory (streams.c). */
  _Atomic uint64_t written_words;
  /* A check's run of it wrote memory its application launch left alone:
   * its checks compare every region after every run (gates/runner.c). */
  _Atomic int hash_every_region;
};

/* The kernel record for a launch handle (first sight creates it). Never
 * NULL except on out-of-memory. Caller must hold the guard. */
struct kc_kernel *kc_kernel_get(CUfunction f);
/* Retries the parameter layout of a kernel whose layout was unknown. */
void kc_kernel_refresh_layout(struct kc_kernel *k);
/* Forgets kernels of an unloaded module/library (handles can be reused). */
void kc_kernel_forget_image(void *image_handle);
/* Demangles with the C++ ABI library; returns a malloc'd string. */
char *kc_demangle(const char *mangled);
/* Applies kernel_include/exclude options to a demangled name. */
int kc_kernel_name_eligible(const char *demangled);
int kc_kernel_is_communication(const char *demangled);
void kc_kernel_reset_lock(void);

/* Adds what a layer above knows about kernel k to its `kernel` record
 * (contract/: the contract that matches it). Installed by the shim before
 * any launch; NULL: nothing is added. */
struct json_t;
typedef void (*kc_kernel_record_fn)(const struct kc_kernel *k, struct json_t *rec);
void kc_kernel_set_record_hook(kc_kernel_record_fn fn);

#endif
