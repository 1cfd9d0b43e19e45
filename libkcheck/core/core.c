/* libkcheck/core/core.c — start-up, exit summary, fork handling, and the
 * non-launch events the shim reports (allocations, code loads). */
#include "core.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "allocmap.h"
#include "audit.h"
#include "driver.h"
#include "finding.h"
#include "graph.h"
#include "guard.h"
#include "image.h"
#include "intra.h"
#include "kernel.h"
#include "log.h"
#include "options.h"
#include "perturb.h"
#include "policy.h"
#include "prof.h"
#include "report.h"
#include "san_route.h"
#include "serving.h"
#include "stack.h"
#include "staging.h"
#include "thread.h"
#include "uninit.h"
#include "world.h"

int kc_disabled = 1;
void (*kc_core_activate)(void);
int kc_core_initialized;

/* Set once the exit writing began (kc_core_fini or kc_core_exit_flush). */
static atomic_int fini_started;
static pid_t owner_pid;

static void at_exit(void) { kc_core_fini(); }

/* exit_group, as glibc's _exit ends a process. Not _exit itself: the shim
 * exports its own _exit (a program's os._exit still writes the report),
 * and the core's own exits have written what they meant to already. */
_Noreturn void kc_exit_process(int status) {
  for (;;)
    syscall(SYS_exit_group, status);
}

/* exitcode=N: the exit status tells CI that violations exist (like the
 * sanitizers'). exit() cannot be given another status from inside, so the
 * process is ended with N as the last step of exit's own work: an ELF
 * destructor of libkcheck runs in the dynamic linker's finalisation
 * (_dl_fini, itself exit's first-registered, so last-run, handler), after
 * every atexit handler of the application and its C++ static destructors
 * but before the destructors of libraries finalised after libkcheck (any
 * the application links that libkcheck does not depend on). Ending the
 * process there skipped those; so the destructor registers one more exit
 * handler (glibc runs handlers registered while exit runs them, after the
 * one running: here after the whole of _dl_fini) and that one flushes stdio
 * (what exit would still do) and ends the process with N. Only when the
 * registration fails does the destructor end the process itself. */
extern int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);

static void exit_with_status(void *unused) {
  (void)unused;
  fflush(NULL);
  kc_exit_process((int)kc_opt.exitcode);
}

__attribute__((destructor)) static void exit_status(void) {
  if (kc_disabled || !kc_opt.exitcode || !atomic_load(&kc_count.violations)) return;
  /* No DSO handle: the handler belongs to no library, so no library's
   * finalisation runs it early. */
  if (__cxa_atexit(exit_with_status, NULL, NULL) == 0) return;
  exit_with_status(NULL);
}

int kc_core_init(int (*layers_init)(void)) {
  int problems = kc_options_init();
  if (kc_opt.help) kc_options_print_help(stderr);
  if (layers_init) problems += layers_init();
  problems += kc_findings_init();
  /* A list that named nothing or lost an entry: each said why on its line.
   * Stopped here, before the application's first kernel, since the run
   * would otherwise report "0 violations" for checks it never made. */
  if (kc_options_fatal_count()) kc_exit_process(1);
  if (problems && kc_opt.strict) {
    kc_log_printf(KC_LOG_ERROR, "strict=1: %d option problem%s; exiting", problems,
                  problems == 1 ? "" : "s");
    kc_exit_process(1);
  }
  kc_serving_apply();
  kc_prof_on = kc_opt.profile;
  kc_report_set_own_kernels(kc_perturb_summary_json);
  /* No report would read as a clean run: the message said why. */
  if (kc_report_open()) kc_exit_process(1);
  kc_core_initialized = 1;
  owner_pid = getpid();
  atexit(at_exit);
  kc_signals_install();
  kc_disabled = 0;
  return 0;
}

void kc_core_driver_ready(int have_driver) {
  if (!have_driver) {
    KC_LOG(KC_LOG_INFO, "libcuda.so.1 not found; kcheck stays passive");
    return;
  }
  if (kc_opt.cupti_audit) kc_audit_start();
  kc_san_start_early();
}

/* The profile, the last budget window and the summary (findings first). */
static void write_exit_records(void) {
  kc_prof_finish();
  kc_serving_finish(kc_policy_check_seconds());
  kc_report_finish();
}

void kc_core_fini(void) {
  if (kc_disabled) return;
  atomic_store(&fini_started, 1);
  kc_audit_finish();
  kc_guard_enter();
  kc_perturb_fini();
  kc_staging_release();
  kc_guard_leave();
  write_exit_records();
}

void kc_core_exit_flush(void) {
  if (kc_disabled || atomic_exchange(&fini_started, 1)) return;
  write_exit_records();
}

int kc_core_exit_wanted(void) {
  return !kc_disabled && kc_core_initialized && !kc_guard_depth && !atomic_load(&fini_started) &&
         getpid() == owner_pid;
}

/* How long a fork waits for kcheck's threads to finish starting: a start
 * takes microseconds; the bound only keeps a stalled one from stalling the
 * application's fork. */
#define KC_FORK_THREAD_WAIT_MS 1000

void kc_core_prefork(void) {
  /* A thread copied half-started leaves the child locks it cannot reset
   * (thread.h). */
  (void)kc_thread_wait_started(KC_FORK_THREAD_WAIT_MS);
  kc_report_lock();
}

void kc_core_postfork_parent(void) { kc_report_unlock(); }

void kc_core_postfork_child(void) {
  /* Only this thread exists in the child: reset locks others may have held,
   * and give the child a report of its own. */
  owner_pid = getpid();
  kc_thread_postfork_child();
  kc_report_reset_lock();
  kc_allocmap_reset_lock();
  kc_kernel_reset_lock();
  kc_world_postfork_child();
  kc_graph_postfork_child();
  kc_uninit_postfork_child();
  kc_findings_reset_child();
  kc_report_reopen_child((long)getppid());
  kc_signals_postfork_child();
}

void kc_on_alloc(uint64_t base, uint64_t size, int kind) {
  atomic_fetch_add(&kc_count.allocations, 1);
  kc_allocmap_insert(base, size, kind);
}

void kc_on_free(uint64_t base) { kc_allocmap_remove(base); }

int kc_on_alloc_failed(void) {
  kc_guard_enter();
  int freed = kc_staging_release();
  kc_guard_leave();
  return freed;
}

void kc_on_map(uint64_t base, uint64_t size) { kc_allocmap_insert(base, size, KC_ALLOC_VMM); }

void kc_on_unmap(uint64_t base, uint64_t size) { kc_allocmap_remove_range(base, size); }

void kc_on_image_load(void *handle, int is_library, const void *image, const char *path) {
  kc_image_loaded(handle, is_library, image, path);
}

void kc_on_image_unload(void *handle) {
  kc_intra_forget_image(handle);
  kc_kernel_forget_image(handle);
  kc_image_unloaded(handle);
}

void kc_on_unwrapped_entry(const char *symbol) {
  /* Launches through such an entry would be invisible: say so, once each. */
  kc_log_printf(KC_LOG_WARN,
                "cuGetProcAddress returned an unknown variant of %s; calls through it "
                "are not seen by kcheck",
                symbol);
}

void kc_report_violation(json_t *rec) {
  /* Attribution, suppressions, de-duplication, the record and the finding
   * block: finding.c. */
  if (kc_finding_report(rec) && kc_opt.halt_on_error) {
    kc_core_fini();
    fflush(NULL);
    kc_exit_process(kc_opt.exitcode ? (int)kc_opt.exitcode : 1);
  }
}
