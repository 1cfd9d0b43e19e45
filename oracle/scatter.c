/* oracle/scatter.c — oc_check_embedding_backward: the gradient of an
 * embedding (ATen's embedding_dense_backward), grad_weight[r] = sum of the
 * gradient rows g[i] whose index is r (none for padding_idx), every
 * element against its exact sum.
 *
 * ATen sums in orders that differ by device and version, and
 * nondeterministically on CUDA: sorted segments of partial sums in
 * acc_type, a feature kernel that adds each batch's float partial sum into
 * grad_weight in the weight's own type, index_add_ in the tensor's type on
 * the CPU. Any of these is a sum of the m rows with index r in some order
 * where each addition is rounded at worst to the output's type, plus the
 * conversion of a float partial sum: at most 2m roundings of unit
 * u_s = max(u_acc, u_out) on any path, so |out - S| <= gamma_2m(u_s)
 * sum |g| + 2m eta_s (eta_s a subnormal of that type), then the output's
 * rounding. Rows no index names, and padding_idx's row, are exactly 0.
 * A non-finite gradient follows IEEE (Inf, or NaN for Inf - Inf or a NaN)
 * on every order; where sum |g| may overflow the summing type a kernel
 * Inf or NaN is inconclusive. An index outside [0, num_weights) is an
 * error in ATen: inconclusive. The exact sums come from the Kulisch
 * accumulator. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "exact.h"
#include "oracle.h"
#include "verdict.h"

int oc_check_embedding_backward(const struct oc_tensor *g, const struct oc_tensor *index,
                                int64_t padding_idx, const struct oc_tensor *out,
                                const struct oc_profile *p, const struct oc_options *o,
                                struct oc_verdict *v) {
  if (!g || !index || !out || !p || !v || g->rank != 2 || out->rank != 2 || index->rank != 1 ||
      index->shape[0] != g->shape[0] || out->shape[1] != g->shape[1])
    return -1;
  struct oc_options od;
  if (!o) {
    oc_options_default(&od);
    o = &od;
  }
  int64_t m = g->shape[0], d = g->shape[1], nw = out->shape[0];
  /* the rows of g by output row: a counting sort of the indices */
  int64_t *start = calloc((size_t)nw + 1, sizeof *start),
          *rows = malloc((size_t)(m ? m : 1) * sizeof *rows);
  struct oc_acc *acc = oc_acc_new();
  if (!start || !rows || !acc) {
    free(start);
    free(rows);
    oc_acc_free(acc);
    return -1;
  }
  int bad = 0;
  for (int64_t i = 0; i < m; i++) {
    double t = oc_tensor_at(index, i * index->stride[0]);
    if (!(t == floor(t) && t >= 0 && t < (double)nw))
      bad = 1;
    else if ((int64_t)t != padding_idx)
      start[(int64_t)t + 1]++;
  }
  for (int64_t r = 0; r < nw; r++)
    start[r + 1] += start[r];
  int64_t *fill = calloc((size_t)nw + 1, sizeof *fill);
  if (!fill) {
    free(start);
    free(rows);
    oc_acc_free(acc);
    return -1;
  }
  for (int64_t i = 0; i < m; i++) {
    double t = oc_tensor_at(index, i * index->stride[0]);
    if (t == floor(t) && t >= 0 && t < (double)nw && (int64_t)t != padding_idx) {
      int64_t r = (int64_t)t;
      rows[start[r] + fill[r]++] = i;
    }
  }
  free(fill);
  enum oc_format sf = oc_unit_roundoff(p->out) > oc_profile_u_acc(p) ? p->out : p->acc;
  double us = oc_unit_roundoff(sf), etas = oc_format_info(sf)->min_subnormal;
  double top = oc_overflow_threshold(sf);
  struct oc_check c;
  oc_check_init(&c, "embedding_backward", p, o, v, nw * d, 2, NULL, NULL);
  int64_t idx[OC_MAX_RANK] = {0};
  for (int64_t r = 0; r < nw; r++) {
    int64_t cnt = start[r + 1] - start[r];
    for (int64_t k = 0; k < d; k++) {
      struct oc_elem e;
      memset(&e, 0, sizeof e);
      idx[0] = r, idx[1] = k;
      e.k = oc_tensor_at(out, r * out->stride[0] + k * out->stride[1]);
      e.prob = INFINITY;
      if (bad) {
        v->checked++;
        oc_check_inconclusive(&c, "an index outside [0, num_weights) (ATen raises an error)");
        continue;
      }
      if (cnt == 0) { /* untouched, or padding_idx: zero */
        e.exact_only = 1;
        oc_check_elem(&c, &e, idx);
        continue;
      }
      oc_acc_clear(acc);
      double sabs = 0, sd = 0;
      for (int64_t j = start[r]; j < start[r + 1]; j++) {
        double x = oc_tensor_at(g, rows[j] * g->stride[0] + k * g->stride[1]);
        oc_acc_add(acc, x);
        sd += x;
        sabs = oc_add_up(sabs, fabs(x));
      }
      if (!isfinite(sd) || oc_acc_is_nan(acc)) { /* IEEE on every order */
        e.lo = e.hi = oc_round(p->out, sd, p->out_ovf);
        e.exact_only = 1;
        e.ovf_ok = isfinite(sabs) && !(oc_mul_up(sabs, 1.01) < top);
        oc_check_elem(&c, &e, idx);
        continue;
      }
      oc_elem_sum(&e, acc, 2 * (double)cnt, sabs, us, etas, top, p);
      oc_check_elem(&c, &e, idx);
    }
  }
  oc_check_finish(&c, 0);
  free(start);
  free(rows);
  oc_acc_free(acc);
  return 0;
}
