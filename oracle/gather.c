/* oracle/gather.c — oc_check_index_select: data movement by an index
 * (torch.index_select, embedding's forward) has one correct result, the
 * selected elements bit for bit; a kernel that reads the wrong row, mixes
 * rows or converts on the way is found element by element. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "oracle.h"
#include "verdict.h"

int oc_check_index_select(const struct oc_tensor *x, int axis, const struct oc_tensor *index,
                          const struct oc_tensor *out, const struct oc_profile *p,
                          const struct oc_options *o, struct oc_verdict *v) {
  if (!x || !index || !out || !p || !v || index->rank != 1 || out->rank != x->rank) return -1;
  if (axis < 0) axis += x->rank;
  if (axis < 0 || axis >= x->rank || out->fmt != x->fmt) return -1;
  for (int d = 0; d < x->rank; d++)
    if (out->shape[d] != (d == axis ? index->shape[0] : x->shape[d])) return -1;
  struct oc_options od;
  if (!o) {
    oc_options_default(&od);
    o = &od;
  }
  struct oc_check c;
  int64_t total = oc_tensor_numel(out), size = x->shape[axis];
  oc_check_init(&c, "index_select", p, o, v, total, out->rank, NULL, NULL);
  int64_t idx[OC_MAX_RANK] = {0};
  for (int64_t n = 0; n < total; n++) {
    double iv = oc_tensor_at(index, idx[axis] * index->stride[0]);
    int64_t oo = 0, ox = 0;
    for (int d = 0; d < out->rank; d++)
      oo += idx[d] * out->stride[d];
    if (!(iv == floor(iv) && iv >= (double)-size && iv < (double)size)) {
      v->checked++;
      oc_check_inconclusive(&c, "an index outside the dim or not an integer");
    } else {
      int64_t k = (int64_t)iv < 0 ? (int64_t)iv + size : (int64_t)iv;
      for (int d = 0; d < x->rank; d++)
        ox += (d == axis ? k : idx[d]) * x->stride[d];
      struct oc_elem e;
      memset(&e, 0, sizeof e);
      e.k = oc_tensor_at(out, oo);
      e.lo = e.hi = oc_tensor_at(x, ox);
      e.prob = INFINITY;
      e.exact_only = 1;
      e.zero_sign = 1; /* a copy keeps -0 */
      oc_check_elem(&c, &e, idx);
    }
    for (int d = out->rank - 1; d >= 0; d--) {
      if (++idx[d] < out->shape[d]) break;
      idx[d] = 0;
    }
  }
  oc_check_finish(&c, 0);
  return 0;
}
