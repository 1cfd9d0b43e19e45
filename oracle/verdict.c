/* oracle/verdict.c — special-value rules, evidence and the final verdict
 * (ORACLE.md §5). Failures are decided on a lower bound of the observed
 * error (the exact value is only known to lie in [lo, hi]), so a rounding
 * in the reference can never produce a false failure. */
#include "verdict.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "exact.h"

static const char *const names[] = {
#define OC_VERDICT(id, name, desc) name,
#include "verdicts.def"
#undef OC_VERDICT
};
static const char *const stat_names[] = {"none", "consistent", "rejected"};

const char *oc_stat_name(int s) {
  return (unsigned)s < sizeof stat_names / sizeof stat_names[0] ? stat_names[s] : "?";
}

const char *oc_verdict_name(enum oc_verdict_kind k) {
  return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

int oc_verdict_is_fail(enum oc_verdict_kind k) {
  return k == OC_FAIL_PRECISION || k == OC_FAIL_VALUE || k == OC_FAIL_SPECIAL;
}

double oc_overflow_threshold(enum oc_format f) {
  const struct oc_format_info *fi = oc_format_info(f);
  if (!fi->has_inf) return INFINITY;
  return fi->max_finite + ldexp(1, fi->emax - fi->p - 1);
}

void oc_options_default(struct oc_options *o) {
  memset(o, 0, sizeof *o);
  o->delta = 1e-6;
  o->fraction = 1e-3;
  o->seed = 0x6b636865636bULL;
  o->tile_m = o->tile_n = 128;
  o->screen = 1;
  o->screen_vectors = 2;
  o->stat_alpha = 1e-6;
  o->ladder = 1;
  o->full_below = 65536;
}

void oc_check_init(struct oc_check *c, const char *op, const struct oc_profile *p,
                   const struct oc_options *o, struct oc_verdict *v, int64_t total, int rank,
                   oc_bound_fn bound_fn, const void *ctx) {
  memset(c, 0, sizeof *c);
  memset(v, 0, sizeof *v);
  c->v = v;
  c->p = p;
  c->o = o;
  c->bound_fn = bound_fn;
  c->ctx = ctx;
  snprintf(v->op, sizeof v->op, "%s", op);
  memcpy(v->profile, p->name, sizeof v->profile);
  v->total = total;
  v->rank = rank;
  v->fraction = o->fraction;
  v->stat_alpha = o->stat_alpha;
  v->kind = OC_PASS;
}

int oc_round_enclosure(enum oc_format f, enum oc_overflow ovf, double lo, double hi, double *r) {
  double a = oc_round(f, lo, ovf), b = oc_round(f, hi, ovf);
  if (lo == hi || a == b || (a != a && b != b)) {
    *r = a;
    return 1;
  }
  if (nextafter(lo, INFINITY) != hi) return 0;
  /* lo and hi are adjacent doubles and a != b, so the rounding boundary of
   * f (a midpoint, exact in double) is lo or hi itself, and y lies strictly
   * inside (lo, hi): it rounds away from the boundary. */
  double mid = a / 2 + b / 2;
  if (mid == lo)
    *r = b;
  else if (mid == hi)
    *r = a;
  else
    return 0;
  return 1;
}

static void set_evidence(struct oc_check *c, const struct oc_elem *e, const int64_t *idx,
                         double err, double ratio) {
  struct oc_verdict *v = c->v;
  for (int d = 0; d < v->rank; d++)
    v->index[d] = idx[d];
  v->kernel = e->k;
  v->exact = e->lo == e->hi ? e->lo : e->lo + (e->hi - e->lo) / 2;
  v->bound = e->bound;
  v->error = err;
  v->ratio = ratio;
}

static void special(struct oc_check *c, const struct oc_elem *e, const int64_t *idx,
                    const char *what) {
  c->v->n_special++;
  if (!c->have_special) {
    c->have_special = 1;
    set_evidence(c, e, idx, fabs(e->k - e->lo), INFINITY);
    snprintf(c->v->detail, sizeof c->v->detail, "%s", what);
  }
}

/* A special value matched (NaN for NaN, the Inf of an overflow): the
 * evidence while nothing worse is seen, so a verdict made of them shows an
 * element, not zeros. */
static void matched(struct oc_check *c, const struct oc_elem *e, const int64_t *idx) {
  if (c->have_worst || c->have_special) return;
  c->have_worst = 1;
  c->worst_ratio = 0;
  set_evidence(c, e, idx, 0, 0);
}

/* The first element left unjudged by an overflowing accumulation: the
 * evidence of the inconclusive verdict. */
static void overflowed(struct oc_check *c, const struct oc_elem *e, const int64_t *idx) {
  if (c->have_ovf) return;
  c->have_ovf = 1;
  c->ovf_e = *e;
  for (int d = 0; d < c->v->rank && d < OC_MAX_RANK; d++)
    c->ovf_idx[d] = idx[d];
}

static void keep_fail(struct oc_check *c, const struct oc_elem *e, double err_lo, double ratio) {
  if (c->capfails == 0) {
    c->capfails = 512;
    c->fails = malloc(c->capfails * sizeof *c->fails);
    if (!c->fails) {
      c->capfails = 0;
      return;
    }
    c->nfails = 0; /* a fresh buffer holds no records (nfails <= capfails == 0 before) */
  }
  size_t slot = c->nfails;
  if (c->nfails == c->capfails) { /* full: replace the mildest kept failure */
    slot = 0;
    for (size_t i = 1; i < c->nfails; i++)
      if (c->fails[i].ratio < c->fails[slot].ratio) slot = i;
    if (c->fails[slot].ratio >= ratio) return;
  } else {
    c->nfails++;
  }
  c->fails[slot].err_lo = err_lo;
  c->fails[slot].ratio = ratio;
  c->fails[slot].e = *e;
}

/* Output overflow under the profile's rule: 1 when every value in [a, b]
 * (a <= b, one sign) rounds to NaN (e4m3fn with ovf=ieee) or Inf. */
static int ovf_value(enum oc_format f, double x) {
  double r = oc_round(f, x, OC_OVF_IEEE);
  return r != r || isinf(r);
}

int oc_check_elem(struct oc_check *c, const struct oc_elem *e, const int64_t *idx) {
  struct oc_verdict *v = c->v;
  const struct oc_profile *p = c->p;
  const struct oc_format_info *fo = oc_format_info(p->out);
  double k = e->k, lo = e->lo, hi = e->hi, b = e->bound;
  v->checked++;
  if (e->alt_ok) return 0; /* one of the op's other correct results */

  if (lo != lo || hi != hi) { /* exact value is NaN */
    if (k != k) {
      v->n_bitwise++;
      matched(c, e, idx);
      return 0;
    }
    special(c, e, idx, "exact value is NaN, kernel returned a number");
    return 1;
  }
  if (isinf(lo) && lo == hi) { /* exact value is +-Inf */
    double want = fo->has_inf                     ? lo
                  : p->out_ovf == OC_OVF_SATURATE ? copysign(fo->max_finite, lo)
                                                  : NAN;
    if (k == want || (want != want && k != k)) {
      v->n_bitwise++;
      matched(c, e, idx);
      return 0;
    }
    special(c, e, idx, "exact value is infinite, kernel disagrees");
    return 1;
  }
  double yabs = fmax(fabs(lo), fabs(hi));
  double ymin = (lo > 0) == (hi > 0) && lo != 0 && hi != 0 ? fmin(fabs(lo), fabs(hi)) : 0;
  /* the kernel's value before its output rounding lies within pre of the
   * exact value; the output rule (Inf, NaN for e4m3fn, or clamping) then
   * decides which overflowed results are right */
  double pre = e->pre_set ? e->pre : b;
  double top = oc_add_up(yabs, pre);
  /* below the largest finite value nothing can round to an overflow: the
   * exact tests (two roundings) only near the top of the range */
  int near = p->out_ovf == OC_OVF_IEEE && !(top < fo->max_finite);
  int may_ovf = near && ovf_value(p->out, top);
  double low = oc_down(ymin - pre); /* the smallest magnitude the value may have */
  int must_ovf = near && ymin > 0 && low > 0 && ovf_value(p->out, low);
  if (k != k || isinf(k)) {
    int sign_ok = k != k || (k > 0) == (hi > 0) || (k < 0) == (lo < 0);
    int kind_ok = k != k ? !fo->has_inf : fo->has_inf; /* NaN is e4m3fn's overflow */
    /* The exact value rounds to the overflow on every path the bound
     * admits (3e38 + 3e38 in fp32): the kernel's Inf is the correctly
     * rounded result, whether or not the accumulation may also overflow
     * on the way. */
    if (must_ovf && sign_ok && kind_ok && top < INFINITY) {
      v->n_bitwise++;
      matched(c, e, idx);
      return 0;
    }
    if (e->ovf_ok || e->ovf_any) { /* the declared accumulator may overflow on this path */
      c->n_ovf++;
      overflowed(c, e, idx);
      return 0;
    }
    if (may_ovf && sign_ok && kind_ok) {
      if (!(top < INFINITY)) { /* only an infinite bound admits it: proves nothing */
        c->n_inf_bound++;
        return 0;
      }
      if (must_ovf) v->n_bitwise++;
      return 0;
    }
    special(c, e, idx,
            k != k ? "kernel returned NaN where the exact value is finite"
                   : "kernel returned Inf where the exact value is finite and in range");
    return 1;
  }
  if (must_ovf) {
    special(c, e, idx,
            fo->has_inf ? "kernel returned a finite value where the output must overflow to Inf"
                        : "kernel returned a finite value where the output must overflow (NaN "
                          "under ovf=ieee)");
    return 1;
  }
  if (p->out_ovf == OC_OVF_SATURATE && yabs > fo->max_finite)
    b = oc_add_up(b, oc_up(yabs - fo->max_finite)); /* clamping is the declared rule */
  if (e->zero_sign && lo == 0 && hi == 0 && k == 0 && signbit(k) != signbit(lo)) {
    special(c, e, idx, "sign of zero differs");
    return 1;
  }

  double rn;
  /* bit for bit: a zero's sign counts where it is known (a point
   * enclosure of one sign); an enclosure around 0, or [-0, +0] from an
   * exact accumulator's directed roundings, leaves it open */
  if (oc_round_enclosure(p->out, p->out_ovf, lo, hi, &rn) && rn == k &&
      (signbit(rn) == signbit(k) || (rn == 0 && (lo != hi || signbit(lo) != signbit(hi)))))
    v->n_bitwise++;

  double err_lo = k < lo ? oc_down(lo - k) : k > hi ? oc_down(k - hi) : 0;
  if (e->ovf_any && !(err_lo <= b)) { /* see struct oc_elem */
    c->n_ovf_any++;
    overflowed(c, e, idx);
    return 0;
  }
  double mid = lo == hi ? lo : lo + (hi - lo) / 2;
  double err = fabs(k - mid);
  if (k < lo)
    v->n_neg++;
  else if (k > hi)
    v->n_pos++;
  if (isinf(b)) c->n_inf_bound++;
  double ratio = err == 0 ? 0 : b > 0 ? err / b : INFINITY;
  if (e->prob < INFINITY) {
    c->n_stat_elems++;
    double sr = err == 0 ? 0 : e->prob > 0 ? err / e->prob : INFINITY;
    if (err_lo > e->prob) v->n_stat++;
    if (sr > v->stat_ratio) {
      v->stat_ratio = sr;
      for (int d = 0; d < v->rank; d++)
        v->stat_index[d] = idx[d];
    }
  }
  int failed = err_lo > b;
  if (failed) {
    v->n_fail++;
    keep_fail(c, e, err_lo, ratio);
  }
  if (!c->have_worst || ratio > c->worst_ratio) {
    c->have_worst = 1;
    c->worst_ratio = ratio;
    if (!c->have_special) set_evidence(c, e, idx, err, ratio);
  }
  return failed;
}

void oc_check_inconclusive(struct oc_check *c, const char *why) {
  if (!c->v->detail[0]) snprintf(c->v->detail, sizeof c->v->detail, "%s", why);
  c->n_inf_bound = c->n_inf_bound ? c->n_inf_bound : 1;
}

static void explain(struct oc_check *c) {
  struct oc_verdict *v = c->v;
  struct oc_profile rungs[8];
  int exact_only = 0;
  for (size_t i = 0; i < c->nfails; i++)
    exact_only |= c->fails[i].e.exact_only;
  int n = c->bound_fn && c->o->ladder && !exact_only ? oc_profile_ladder(c->p, rungs, 8) : 0;
  for (int r = 0; r < n; r++) {
    int ok = 1;
    for (size_t i = 0; i < c->nfails && ok; i++) {
      double b = c->bound_fn(&rungs[r], &c->fails[i].e, c->ctx);
      ok = b < INFINITY && c->fails[i].err_lo <= b;
    }
    if (ok) {
      v->kind = OC_FAIL_PRECISION;
      memcpy(v->explained_by, rungs[r].name, sizeof v->explained_by);
      return;
    }
  }
  v->kind = OC_FAIL_VALUE;
}

void oc_check_finish(struct oc_check *c, int64_t random_samples) {
  struct oc_verdict *v = c->v;
  if (v->checked >= v->total)
    v->miss_prob = 0;
  else
    v->miss_prob = exp(-v->fraction * (double)random_samples);
  if (v->n_special)
    v->kind = OC_FAIL_SPECIAL;
  else if (v->n_fail)
    explain(c);
  else if (c->n_inf_bound) {
    v->kind = OC_INCONCLUSIVE;
    if (!v->detail[0])
      snprintf(v->detail, sizeof v->detail,
               "no finite bound for %lld element(s): the profile's error bound is infinite there "
               "(a sum of n terms in a type where n u >= 1, or beyond double's range)",
               (long long)c->n_inf_bound);
  } else if (c->n_ovf || c->n_ovf_any) {
    /* The profile's own arithmetic may overflow there (partial sums beyond
     * the accumulator's range, tf32 rounding of a huge operand, a norm's
     * sum of squares): Inf or NaN, or a value off the bound (a norm's 0),
     * is what a correct kernel may return, and it says nothing about the
     * exact value. Neither a failure nor a pass. */
    v->kind = OC_INCONCLUSIVE;
    if (c->n_ovf_any)
      snprintf(v->detail, sizeof v->detail,
               "%lld element(s) off the bound where the declared accumulation overflows (sum "
               "of squares beyond the accumulator's range: allowed, not verifiable)",
               (long long)(c->n_ovf + c->n_ovf_any));
    else
      snprintf(v->detail, sizeof v->detail,
               "%lld element(s) Inf/NaN where the declared accumulation may overflow (allowed "
               "by the profile, not verifiable)",
               (long long)c->n_ovf);
    if (c->have_ovf) {
      const struct oc_elem *e = &c->ovf_e;
      double mid = e->lo == e->hi ? e->lo : e->lo + (e->hi - e->lo) / 2;
      double err = fabs(e->k - mid);
      set_evidence(c, e, c->ovf_idx, err, e->bound > 0 ? err / e->bound : INFINITY);
    }
  } else if (v->checked < v->total && v->miss_prob > c->o->delta * 1.0000001) {
    v->kind = OC_INCONCLUSIVE;
    snprintf(v->detail, sizeof v->detail, "coverage below target: miss probability %.3g > %.3g",
             v->miss_prob, c->o->delta);
  } else if (v->checked > 0 && v->n_bitwise == v->checked)
    v->kind = OC_BITWISE;
  else
    v->kind = OC_PASS;
  v->stat = !c->n_stat_elems ? OC_STAT_NONE : v->n_stat ? OC_STAT_REJECTED : OC_STAT_CONSISTENT;
  if (v->stat == OC_STAT_NONE) v->stat_alpha = 0;
  free(c->fails);
  c->fails = NULL;
  c->nfails = c->capfails = 0;
}

int oc_verdict_format(const struct oc_verdict *v, char *buf, size_t n) {
  char idx[128] = "";
  size_t at = 0;
  for (int d = 0; d < v->rank && at < sizeof idx - 24; d++)
    at +=
        (size_t)snprintf(idx + at, sizeof idx - at, "%s%lld", d ? "," : "", (long long)v->index[d]);
  char why[200] = "", screen[96] = "", stat[160] = "";
  if (v->screen_vectors)
    snprintf(screen, sizeof screen,
             ", screen %s%d flagged (single element > %.3gx row bound: miss<=%.2g)",
             v->screen_failed ? "" : "ok, ", v->screen_failed, v->screen_catch, v->screen_miss);
  if (v->stat == OC_STAT_REJECTED)
    snprintf(stat, sizeof stat,
             "; statistical: rejected (%lld element(s), worst %.3g x the statistical bound; "
             "the model's false-alarm rate %.2g; rows of near-constant terms not judged)",
             (long long)v->n_stat, v->stat_ratio, v->stat_alpha);
  else if (v->stat == OC_STAT_CONSISTENT)
    snprintf(stat, sizeof stat, "; statistical: consistent");
  if (v->kind == OC_FAIL_PRECISION)
    snprintf(why, sizeof why, " consistent with %s;", v->explained_by);
  else if ((v->kind == OC_FAIL_SPECIAL || v->kind == OC_INCONCLUSIVE) && v->detail[0])
    snprintf(why, sizeof why, " %s;", v->detail);
  return snprintf(buf, n,
                  "%s %s[%s] worst at (%s): kernel=%.9g exact=%.9g error=%.3g bound=%.3g "
                  "ratio=%.3g;%s failed %lld, special %lld; checked %lld/%lld, miss<=%.2g%s%s",
                  oc_verdict_name(v->kind), v->op, v->profile, idx, v->kernel, v->exact, v->error,
                  v->bound, v->ratio, why, (long long)v->n_fail, (long long)v->n_special,
                  (long long)v->checked, (long long)v->total, v->miss_prob, screen, stat);
}

void oc_elem_sum(struct oc_elem *e, const struct oc_acc *acc, double k, double sabs, double us,
                 double etas, double top, const struct oc_profile *p) {
  e->lo = oc_acc_round(acc, MPFR_RNDD);
  e->hi = oc_acc_round(acc, MPFR_RNDU);
  e->pre = oc_add_up(oc_mul_up(oc_gamma(k, us), sabs), oc_mul_up(etas, k));
  e->pre_set = 1;
  e->bound = oc_out_bound(p, fmax(fabs(e->lo), fabs(e->hi)), e->pre);
  e->ovf_ok = !(oc_mul_up(sabs, 1.01) < top);
}
