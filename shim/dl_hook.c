/* shim/dl_hook.c — decides what the exported dlsym/dlvsym answer. Only cu*
 * names kcheck hooks, asked of libcuda's handle or RTLD_DEFAULT, get a
 * wrapper; everything else goes to glibc untouched (tail jump). No heavy
 * work here: this runs inside every dlsym of the process. */
#include <dlfcn.h>
#include <string.h>

#include "guard.h"
#include "log.h"
#include "shim.h"

int kc_shim_dlsym_prepare(void *handle, const char *name, void **result);
int kc_shim_dlvsym_prepare(void *handle, const char *name, const char *version, void **result);

static int is_cu_name(const char *name) { return name && name[0] == 'c' && name[1] == 'u'; }

/* 1: *result is the answer; 0: let glibc answer (tail jump). */
static int route(void *handle, const char *name, void **result) {
  if (KC_NEVER(!kc_real_dlsym || !kc_real_dlvsym) && kc_shim_resolve_dl()) {
    *result = NULL; /* no real dlsym: fail soft rather than jump to NULL */
    return 1;
  }
  if (handle == RTLD_NEXT || !is_cu_name(name)) return 0;
  int id = kc_shim_hook_id(name);
  if (id < 0) return 0;
  if (!atomic_load_explicit(&kc_shim_ready, memory_order_acquire)) {
    if (kc_guarded()) return 0; /* inside kcheck's own start-up */
    kc_shim_activate();
  }
  if (handle == RTLD_DEFAULT) {
    /* Without kcheck this finds the driver's symbol or nothing. */
    *result = kc_shim_real[id] ? kc_shim_wrappers[id] : NULL;
    return 1;
  }
  if (kc_shim_libcuda && handle == kc_shim_libcuda) {
    *result = kc_shim_real[id] ? kc_shim_wrappers[id] : NULL;
    return 1;
  }
  return 0;
}

int kc_shim_dlsym_prepare(void *handle, const char *name, void **result) {
  return route(handle, name, result);
}

int kc_shim_dlvsym_prepare(void *handle, const char *name, const char *version, void **result) {
  (void)version; /* libcuda does not version its symbols */
  return route(handle, name, result);
}
