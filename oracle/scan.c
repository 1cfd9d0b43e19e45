/* oracle/scan.c — oc_check_cumsum: the inclusive prefix sums of x along
 * one axis (torch.cumsum), every output element against its exact
 * prefix sum.
 *
 * A scan may associate each prefix differently (ATen's CUDA scan_dim:
 * per-thread sequential runs, block-level up/down sweeps, CUB's decoupled
 * look-back across blocks, nondeterministic for floats by PyTorch's own
 * note; its CPU kernel: a sequential sum in acc_type), but every prefix
 * s_k = x_0 + ... + x_k is still a sum of exactly those k + 1 terms, and
 * a path of a binary tree over k + 1 leaves holds at most k additions.
 * The additions round to the scan's type: acc_type, or the tensor's own
 * 16-bit type where ATen scans in scalar_t (CUDA's std::plus<Half>), so
 * with u_s = max(u_acc, u_out): |out_k - s_k| <= gamma_k(u_s) sum_{j<=k}
 * |x_j| + k eta_s (eta_s a subnormal of that type; the bound's classic
 * form, Higham, Accuracy and Stability, §4.2), then the output's
 * rounding. Inf and NaN follow IEEE on every association (once an Inf is
 * summed the prefixes are Inf, NaN after the other Inf or a NaN); where a
 * prefix's sum |x| may overflow the scan's type a kernel Inf or NaN is
 * inconclusive. The exact prefixes come from the Kulisch accumulator. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "exact.h"
#include "oracle.h"
#include "verdict.h"

int oc_check_cumsum(const struct oc_tensor *x, int axis, const struct oc_tensor *out,
                    const struct oc_profile *p, const struct oc_options *o, struct oc_verdict *v) {
  struct oc_options od;
  if (!x || !out || !p || !v) return -1;
  if (!o) {
    oc_options_default(&od);
    o = &od;
  }
  if (axis < 0) axis += x->rank;
  struct oc_rows rw;
  if (oc_rows_init(&rw, x, axis, out, 1)) return -1;
  int64_t n = rw.n;
  enum oc_format sf = oc_unit_roundoff(p->out) > oc_profile_u_acc(p) ? p->out : p->acc;
  double us = oc_unit_roundoff(sf), etas = oc_format_info(sf)->min_subnormal;
  double top = oc_overflow_threshold(sf);
  double *buf = malloc((size_t)(n ? n : 1) * sizeof *buf);
  struct oc_acc *acc = oc_acc_new();
  if (!buf || !acc) {
    free(buf);
    oc_acc_free(acc);
    return -1;
  }
  struct oc_check c;
  oc_check_init(&c, "cumsum", p, o, v, oc_tensor_numel(out), out->rank, NULL, NULL);
  for (int64_t row = 0; row < rw.nrows; row++) {
    int64_t xo, oo, xidx[OC_MAX_RANK], oidx[OC_MAX_RANK];
    oc_rows_at(&rw, row, &xo, &oo, xidx);
    oc_tensor_gather(x, xo, x->stride[rw.axis], n, buf);
    oc_acc_clear(acc);
    double sabs = 0, sd = 0;
    for (int64_t k = 0; k < n; k++) {
      struct oc_elem e;
      memset(&e, 0, sizeof e);
      e.k = oc_tensor_at(out, oo + k * out->stride[rw.axis]);
      e.prob = INFINITY;
      oc_acc_add(acc, buf[k]);
      sd += buf[k];
      sabs = oc_add_up(sabs, fabs(buf[k]));
      oc_rows_out_index(&rw, xidx, k, oidx);
      if (!isfinite(sd) || oc_acc_is_nan(acc)) { /* IEEE on every association */
        e.lo = e.hi = oc_round(p->out, sd, p->out_ovf);
        e.exact_only = 1;
        e.ovf_ok = isfinite(sabs) && !(oc_mul_up(sabs, 1.01) < top);
      } else {
        oc_elem_sum(&e, acc, (double)k, sabs, us, etas, top, p);
        /* a zero's sign is left open: 0 + (-0) is +0 where the scan
         * starts from its identity */
      }
      oc_check_elem(&c, &e, oidx);
    }
  }
  oc_check_finish(&c, 0);
  free(buf);
  oc_acc_free(acc);
  return 0;
}
