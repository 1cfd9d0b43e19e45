/* libkcheck/base/devmem.h — every byte of device memory kcheck holds for
 * itself, by category (devmem.def), with the device_mem_budget cap. An
 * allocation the cap refuses fails like an out-of-memory, so the check
 * that needed it becomes a recorded skip, never an out-of-memory in the
 * application; kc_devmem_refused says why. */
#ifndef KC_DEVMEM_H
#define KC_DEVMEM_H

#include <cuda.h>
#include <jansson.h>
#include <stdint.h>

enum kc_devmem_cat {
#define KC_DEVMEM(name, how, desc) KC_DM_##name,
#include "devmem.def"
#undef KC_DEVMEM
  KC_DM_COUNT
};

/* cuMemAlloc for kcheck itself: refused (CUDA_ERROR_OUT_OF_MEMORY, no
 * driver call) when it would take kcheck's total over device_mem_budget;
 * else the driver's answer. A success is accounted and marked as kcheck's
 * own (own.h). */
CUresult kc_devmem_alloc(enum kc_devmem_cat cat, CUdeviceptr *p, size_t bytes);
/* Whether `bytes` for cat fit the budget once `held` bytes kcheck holds
 * now (a buffer to be replaced) are given back; 0 records the refusal, as
 * kc_devmem_alloc would, before any work is done for it. */
int kc_devmem_fits(enum kc_devmem_cat cat, uint64_t bytes, uint64_t held);
/* cuMemFree of what kc_devmem_alloc gave (0: nothing). */
CUresult kc_devmem_free(CUdeviceptr p);

/* The most one measured object (a module, a green context) is counted as,
 * whatever its own bound (below) says: the outer limit. */
#define KC_DEVMEM_MEASURED_CAP (64ull << 20)

/* cuMemGetInfo is device-wide: another process's allocation while kcheck
 * makes an object falls into the figure too (the H100 corpus runs of
 * 2026-12-07, eight processes on one GPU: 11 module copies read 89-158 MiB,
 * 2 MiB alone; a green context 44-67 MiB, 6 MiB alone). So each object is
 * counted as at most what it can hold: min(fall, bound). The driver hands
 * device memory out in 2 MiB pages, the smallest step a fall can show. */
#define KC_DEVMEM_GRANULE (2ull << 20)
/* A module's bound beyond its image's bytes rounded up to pages: one page
 * more, since the driver keeps a module's data (constant banks, globals)
 * apart from its code, and a load may start a fresh page of each. Alone
 * on the device, kcheck's module and ten instrumented copies fell by one
 * page in all. */
#define KC_DEVMEM_MODULE_ALLOWANCE KC_DEVMEM_GRANULE
/* Code the driver or the Sanitizer makes from an image is not bounded by
 * the image's bytes: PTX text is JIT-compiled, and a patched cubin's
 * accesses each gain a call to kcheck's callbacks. kcheck's own kernels,
 * 67 KB of PTX, are 75-98 KB cubins (sm_80-sm_120), code, data and ELF
 * tables together; four times the image leaves room for instructions
 * that expand further (division, math calls) and for the patches. */
#define KC_DEVMEM_CODE_FACTOR 4
/* A green context with its stream: alone on the device it took 6 MiB on
 * the H100 and the H200 (three pages); 16 MiB leaves over twice that. */
#define KC_DEVMEM_GREEN_CTX_BOUND (16ull << 20)
/* The Sanitizer route's first patched copy in a context also loads
 * kcheck's callbacks and the Sanitizer's own device state. In the
 * 2026-12-07 H100 runs, processes holding kcheck's module and one patched
 * copy read 12-14.5 MiB in 17 of 59 (the recurring figure, under different
 * neighbours; 5 read 0-2 MiB and 37 more, neighbours freeing or allocating
 * meanwhile); 24 MiB leaves two thirds more. */
#define KC_DEVMEM_SAN_CTX_ALLOWANCE (24ull << 20)

/* The most a module loaded from an image of image_bytes can take: its
 * bytes that reach the device (code and data; KC_DEVMEM_CODE_FACTOR times
 * the PTX text or the patched cubin) rounded up to whole pages, plus
 * KC_DEVMEM_MODULE_ALLOWANCE; KC_DEVMEM_MEASURED_CAP from that many bytes
 * on. */
uint64_t kc_devmem_module_bound(uint64_t image_bytes);

/* Around the creation of a module or green context: kc_devmem_begin says,
 * where may_refuse, whether any budget is left (0: refuse to create it,
 * kc_devmem_refused says why) and takes free memory; kc_devmem_end accounts
 * its fall under cat, at most bound (0: none known) and at most
 * KC_DEVMEM_MEASURED_CAP (either limit used is counted as capped), and
 * returns those bytes (0 when unknown), for kc_devmem_drop when the object
 * is destroyed. */
int kc_devmem_begin(enum kc_devmem_cat cat, int may_refuse, size_t *free_before);
uint64_t kc_devmem_end(enum kc_devmem_cat cat, size_t free_before, uint64_t bound);
void kc_devmem_drop(enum kc_devmem_cat cat, uint64_t bytes);

/* A reported category (devmem.def): with check, whether `bytes` more fit
 * the budget (1; 0 records the refusal, kc_devmem_refused says why);
 * without, the category holds `bytes` now (accounted, peaks raised, never
 * refused: the memory is already in use). Returns 1 for a set. */
int kc_devmem_hold(enum kc_devmem_cat cat, uint64_t bytes, int check);

/* Why this thread's last allocation or creation was refused by the
 * budget ("device_mem_budget: staging needs N bytes, M in use of B"), or
 * NULL when it was not. The text stays until the sixteenth refusal after
 * it (of any thread). */
const char *kc_devmem_refused(void);
/* Bytes kcheck may still allocate under the budget (UINT64_MAX: no cap). */
uint64_t kc_devmem_room(void);
/* Held now, over all categories. */
uint64_t kc_devmem_current(void);

/* The summary's device_mem object: budget, totals and per category the
 * bytes held now, the peak, all bytes ever allocated, allocations and
 * refusals. Lock-free: written from a signal handler too. */
json_t *kc_devmem_summary_json(void);

#endif
