/* shim/activate.c — start-up. The constructor only finds glibc's dl
 * functions; kcheck activates (options, report, driver table) on the first
 * CUDA call, so the many non-CUDA processes a job starts under LD_PRELOAD
 * (compilers, shells) get no report and no libcuda. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "contract.h"
#include "core.h"
#include "dispatch.h"
#include "gate.h"
#include "guard.h"
#include "kernel.h"
#include "log.h"
#include "options.h"
#include "shim.h"
#include "torch_boot.h"

void *kc_shim_real[KC_E_COUNT];
void *kc_shim_libcuda;
atomic_int kc_shim_ready;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load_driver(void) {
  /* The real driver, whatever the application links: never RTLD_NEXT. */
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return;
  kc_shim_libcuda = h;
#define KC_HOOK(sym, fam)                                                                          \
  kc_shim_real[KC_E_##sym] = kc_real_dlsym(h, #sym);                                               \
  kc_drv.sym = (kc_fam_##fam)kc_shim_real[KC_E_##sym];
#define KC_CALL(sym)                                                                               \
  kc_shim_real[KC_E_##sym] = kc_real_dlsym(h, #sym);                                               \
  kc_drv.sym = (__typeof__(kc_drv.sym))kc_shim_real[KC_E_##sym];
#include "driver.def"
#undef KC_HOOK
#undef KC_CALL
}

static void activate_once(void) {
  if (kc_shim_resolve_dl()) {
    kc_log_printf(KC_LOG_ERROR, "glibc's dlsym not found; kcheck stays passive");
    atomic_store(&kc_shim_ready, 1);
    return;
  }
  /* The core knows no contract: the shim wires contract/ in. */
  kc_kernel_set_record_hook(kc_contract_kernel_record);
  kc_core_init(kc_contracts_init);
  if (kc_opt.help) kc_gates_print();
  /* The shim wires the gates into the core: the core knows no gate. */
  if (kc_gates_init() == 0)
    kc_set_check_hook(kc_gates_check);
  else
    kc_opt.check_lock = 0; /* no launch is ever checked: nothing for the lock to hold off */
  load_driver();
  kc_core_driver_ready(kc_shim_libcuda != NULL);
  if (!kc_shim_libcuda) kc_disabled = 1;
  atomic_store_explicit(&kc_shim_ready, 1, memory_order_release);
}

void kc_shim_activate(void) {
  kc_guard_enter();
  pthread_once(&once, activate_once);
  kc_guard_leave();
}

CUresult kc_shim_missing(int id) {
  static atomic_uchar warned[KC_E_COUNT];
  if (!atomic_exchange(&warned[id], 1))
    kc_log_printf(KC_LOG_ERROR, "the driver has no %s; returning an error to the caller",
                  kc_entry_names[id]);
  return kc_shim_libcuda ? CUDA_ERROR_NOT_FOUND : CUDA_ERROR_NO_DEVICE;
}

static void prefork(void) {
  if (atomic_load(&kc_shim_ready)) kc_core_prefork();
}
static void parent(void) {
  if (atomic_load(&kc_shim_ready)) kc_core_postfork_parent();
}
static void child(void) {
  /* Re-arm: the child keeps the hooks and the driver table, gets a report
   * of its own and fresh locks. */
  if (atomic_load(&kc_shim_ready) && !kc_disabled) {
    kc_core_postfork_child();
    kc_findings_reset(); /* its report has none of the parent's findings */
  } else if (atomic_load(&kc_shim_ready))
    kc_core_postfork_parent();
}

__attribute__((constructor)) static void kc_shim_ctor(void) {
  kc_shim_resolve_dl();
  kc_core_activate = kc_shim_activate;
  kc_torch_boot_env();
  pthread_atfork(prefork, parent, child);
}
