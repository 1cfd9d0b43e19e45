/* libkcheck/capture/thread_launches.c — the kernels each thread launched, so a
 * framework binding can name the kernels inside one op (kcheck.h:
 * kcheck_thread_launches, kcheck_thread_kernels). A thread-local count and
 * ring: no lock, no allocation on the launch path. */
#include "thread_launches.h"
#include "export.h"

#include <stdio.h>
#include <string.h>

#include "../../include/kcheck.h"
#include "guard.h"
#include "kernel.h"

#define RING 32

static __thread unsigned long long count;
static __thread const struct kc_kernel *ring[RING];

void kc_thread_note_launch(const struct kc_kernel *k) { ring[count++ % RING] = k; }

KC_EXPORT unsigned long long kcheck_thread_launches(void) { return count; }

KC_EXPORT void kcheck_own_begin(void) { kc_guard_enter(); }

KC_EXPORT void kcheck_own_end(void) {
  if (kc_guarded()) kc_guard_leave();
}

KC_EXPORT long long kcheck_thread_kernels(unsigned long long since, char *buf, unsigned long n) {
  if (buf && n) buf[0] = 0;
  if (since > count) return 0;
  unsigned long long first = count - since > RING ? count - RING : since;
  size_t used = 0;
  for (unsigned long long i = first; buf && i < count; i++) {
    /* Kernel records are never freed (an unloaded image only unlinks them). */
    const struct kc_kernel *k = ring[i % RING];
    const char *name = k && k->demangled ? k->demangled : "?";
    int w = snprintf(buf + used, n - used, "%s\n", name);
    if (w < 0 || (size_t)w >= n - used) {
      buf[used] = 0;
      break;
    }
    used += (size_t)w;
  }
  return (long long)(count - since);
}
