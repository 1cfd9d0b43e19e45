/* libkcheck/core/core.h — start-up, exit and fork handling of the core, and the
 * events the shim reports besides launches. */
#ifndef KC_CORE_H
#define KC_CORE_H

#include <cuda.h>
#include <jansson.h>
#include <stdint.h>

/* 0: kcheck is active; nonzero: it stays out of the way (pass-through). */
extern int kc_disabled;
/* 1 once kc_core_init ran (options parsed, report open), driver or not. */
extern int kc_core_initialized;

/* Activates kcheck (options, report, gates, driver) if it is not yet:
 * set by the shim, for public API calls that may come before the first
 * CUDA call (op-level checks). NULL until the shim is loaded. */
extern void (*kc_core_activate)(void);

/* Options, then the layers' start-up (layers_init, may be NULL: e.g. the
 * contracts' loading; returns its number of problems, fatal like option
 * problems under strict=1), report, exit handler. Returns 0 when kcheck
 * should run. */
int kc_core_init(int (*layers_init)(void));
/* Called once the real driver table is filled. */
void kc_core_driver_ready(int have_driver);
void kc_core_fini(void);
/* Ends the process with status at once (exit_group): no atexit handlers,
 * no destructors, and not through the shim's exported _exit. */
_Noreturn void kc_exit_process(int status);
/* What _exit still writes (atexit does not run): queued findings, the
 * summary; the device and CUPTI are left alone (a forked child may not
 * touch them). Once, and not after kc_core_fini. */
void kc_core_exit_flush(void);
/* Whether an _exit of this thread should flush first: kcheck active, not
 * finished, not inside kcheck, and this is the process kcheck set up (a
 * vfork child shares the parent's memory and must touch nothing). */
int kc_core_exit_wanted(void);
/* SIGTERM/SIGINT handlers that write the summary (signals.c). */
void kc_signals_install(void);
/* kc_core_exit_flush on the watcher thread, waited for a bounded time. */
void kc_signals_exit_flush(void);
/* In a fork's child: a new watcher thread for those handlers. */
void kc_signals_postfork_child(void);
/* fork handlers (pthread_atfork). */
void kc_core_prefork(void);
void kc_core_postfork_parent(void);
void kc_core_postfork_child(void);

/* Events from the shim (results already known to be CUDA_SUCCESS). */
void kc_on_alloc(uint64_t base, uint64_t size, int kind);
void kc_on_free(uint64_t base);
/* The application's allocation failed for lack of memory: 1 when kcheck
 * gave memory back (worth trying again). */
int kc_on_alloc_failed(void);
void kc_on_map(uint64_t base, uint64_t size);
void kc_on_unmap(uint64_t base, uint64_t size);
void kc_on_image_load(void *handle, int is_library, const void *image, const char *path);
void kc_on_image_unload(void *handle);
/* A cuGetProcAddress result kcheck could not wrap (unknown variant). */
void kc_on_unwrapped_entry(const char *symbol);

/* Violations go through here (counting, halt_on_error). */
void kc_report_violation(json_t *rec);

#endif
