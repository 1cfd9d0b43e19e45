/* shim/procaddr.c — what cuGetProcAddress hands out. The driver picks the
 * variant (legacy or _ptsz, _v2, ...) from version and flags; kcheck keeps
 * that exact choice by matching the returned pointer against every real
 * hooked entry and handing out the wrapper of the one it is. */
#include <stdatomic.h>
#include <string.h>

#include "core.h"
#include "shim.h"

int kc_shim_hook_id(const char *name) {
  for (int i = 0; i < KC_E_COUNT; i++)
    if (kc_entry_hooked[i] && !strcmp(kc_entry_names[i], name)) return i;
  return -1;
}

/* Length of the name without a variant suffix (_ptsz, _ptds, _v2, ...). */
static size_t base_len(const char *s) {
  size_t n = strlen(s);
  for (;;) {
    if (n > 5 && (!memcmp(s + n - 5, "_ptsz", 5) || !memcmp(s + n - 5, "_ptds", 5))) {
      n -= 5;
      continue;
    }
    size_t d = n;
    while (d > 0 && s[d - 1] >= '0' && s[d - 1] <= '9')
      d--;
    if (d < n && d >= 2 && s[d - 1] == 'v' && s[d - 2] == '_') {
      n = d - 2;
      continue;
    }
    return n;
  }
}

static atomic_uchar warned[KC_E_COUNT];

void *kc_shim_wrap_proc(const char *symbol, void *real) {
  for (int i = 0; i < KC_E_COUNT; i++) {
    if (!kc_entry_hooked[i]) continue;
    if (kc_shim_real[i] == real) return kc_shim_wrappers[i];
    if (kc_shim_wrappers[i] == real) return real; /* already ours */
  }
  /* A hooked family but a pointer we do not know: pass it through, say so. */
  size_t n = base_len(symbol);
  for (int i = 0; i < KC_E_COUNT; i++) {
    if (!kc_entry_hooked[i]) continue;
    if (base_len(kc_entry_names[i]) == n && !memcmp(kc_entry_names[i], symbol, n)) {
      if (!atomic_exchange(&warned[i], 1)) kc_on_unwrapped_entry(symbol);
      break;
    }
  }
  return real;
}
