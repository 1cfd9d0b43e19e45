/* oracle/recurrence.c — gated delta rule forward (ORACLE.md §2: carry the
 * componentwise bound E_t <= |A_t| E_{t-1} + local_t with the reference).
 * Not implemented yet: the entry point answers inconclusive so callers can
 * wire it now and get a real verdict later without an API change. */
#include <string.h>

#include "verdict.h"

int oc_check_gated_delta(const struct oc_delta_args *args, const struct oc_tensor *out,
                         const struct oc_profile *p, const struct oc_options *o,
                         struct oc_verdict *v) {
  struct oc_options od;
  if (!args || !out || !v) return -1;
  if (!o) {
    oc_options_default(&od);
    o = &od;
  }
  struct oc_check c;
  oc_check_init(&c, "gated_delta", p, o, v, oc_tensor_numel(out), out->rank, NULL, NULL);
  oc_check_inconclusive(&c, "gated delta rule reference not implemented");
  oc_check_finish(&c, 0);
  return 0;
}
