/* libkcheck/base/guard.h — the thread-local re-entrancy guard. While it is set,
 * driver calls on this thread are kcheck's own: the shim passes them straight
 * to the driver and nothing is captured, counted or checked. */
#ifndef KC_GUARD_H
#define KC_GUARD_H

/* initial-exec: libkcheck is loaded at start-up (LD_PRELOAD), so its TLS is
 * static and the guard costs one load on the launch fast path. */
extern __thread int kc_guard_depth __attribute__((tls_model("initial-exec")));

static inline int kc_guarded(void) { return kc_guard_depth != 0; }
static inline void kc_guard_enter(void) { kc_guard_depth++; }
static inline void kc_guard_leave(void) { kc_guard_depth--; }

#endif
