/* libkcheck/exec/staging.h — the device memory checks save into, kept from one
 * check to the next. cuMemAlloc and cuMemFree of the snapshot copies cost
 * more than the copies themselves for small kernels (and cuMemFree
 * synchronises), so one buffer is carved up per check instead. It is
 * given back at exit, when the application's own allocation fails for lack
 * of memory (the shim then retries that allocation once), and when it
 * would be larger than staging_keep of the device's memory. */
#ifndef KC_STAGING_H
#define KC_STAGING_H

#include <cuda.h>
#include <stdint.h>

/* The buffer for one check, at least `bytes` long, 256-byte aligned; 0 if
 * no memory. Held (never given back) until kc_staging_put. */
CUdeviceptr kc_staging_get(uint64_t bytes);
/* Makes the buffer at least bytes long now (at most what is kept between
 * checks), for kcheck's one-time setup: the first checks then neither
 * allocate nor grow it. */
void kc_staging_reserve(uint64_t bytes);
/* The check is over: the buffer stays for the next one unless it is larger
 * than kcheck may keep. */
void kc_staging_put(void);
/* Whether a buffer of `bytes` fits device_mem_budget (the one kept now
 * given back first); 0 records the refusal (kc_devmem_refused says why),
 * before a check waits for the device for nothing. */
int kc_staging_fits(uint64_t bytes);
/* The size of the buffer kept now (0: none). */
uint64_t kc_staging_size(void);
/* Frees the buffer unless a check holds it. 1 when memory was given back. */
int kc_staging_release(void);

#endif
