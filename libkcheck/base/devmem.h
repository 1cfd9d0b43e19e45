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

/* The most one measured object (a module, a green context) is counted as:
 * a larger fall of the device's free memory around it is taken to include
 * another process's allocations. */
#define KC_DEVMEM_MEASURED_CAP (64ull << 20)

/* Around the creation of a module or green context: kc_devmem_begin says,
 * where may_refuse, whether any budget is left (0: refuse to create it,
 * kc_devmem_refused says why) and takes free memory; kc_devmem_end accounts its fall under
 * cat (at most KC_DEVMEM_MEASURED_CAP, counted as capped) and returns those
 * bytes (0 when unknown), for kc_devmem_drop when the object is destroyed. */
int kc_devmem_begin(enum kc_devmem_cat cat, int may_refuse, size_t *free_before);
uint64_t kc_devmem_end(enum kc_devmem_cat cat, size_t free_before);
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
