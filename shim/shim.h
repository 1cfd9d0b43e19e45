/* shim/shim.h — interposition internals: the real dl functions, the table
 * of wrappers by entry id, activation. Nothing outside shim/ includes this. */
#ifndef KC_SHIM_H
#define KC_SHIM_H

#include <stdatomic.h>

#include "driver.h"

/* The symbols the shim interposes carry KC_EXPORT (exports.map.in lists which). */
#include "export.h"

/* Real glibc dlsym/dlvsym, found in libc's own symbol table. */
extern void *(*kc_real_dlsym)(void *, const char *);
extern void *(*kc_real_dlvsym)(void *, const char *, const char *);
int kc_shim_resolve_dl(void);

/* Our wrapper for each hooked entry (NULL for KC_CALL rows). */
extern void *const kc_shim_wrappers[KC_E_COUNT];
/* Real pointer of each entry, by id (mirrors kc_drv). */
extern void *kc_shim_real[KC_E_COUNT];
/* The libcuda handle kcheck opened (NULL until activation). */
extern void *kc_shim_libcuda;

/* Set once activation finished (driver loaded, report open). */
extern atomic_int kc_shim_ready;
/* Loads the driver and starts the core on first CUDA use. */
void kc_shim_activate(void);

/* Hooked entry id for an exported name, or -1. */
int kc_shim_hook_id(const char *name);
/* What cuGetProcAddress should hand out for a real pointer it returned. */
void *kc_shim_wrap_proc(const char *symbol, void *real);
/* Fail-soft return for a hooked entry the driver lacks. */
CUresult kc_shim_missing(int id);

#endif
