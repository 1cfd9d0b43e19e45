/* oracle/optim.c — oc_check_optim: one output of an optimizer step (adam,
 * adamw, sgd; ops.def class OPTIM, formulas in optim.h) against the exact
 * update of the values before the step, every element checked.
 *
 * Exact value: MPFR at 256 bits from the inputs and the attrs as given
 * (beta1 = 0.9 means the double nearest 0.9), bias corrections 1 - beta^t
 * from MPFR's pow; its own error (some 30 roundings of 2^-256, relative to
 * the magnitudes in the formula) is added to the bound.
 *
 * Bound: an interval enclosing every value a correct kernel computes in
 * the compute type (the profile's accumulator: fp32 for fp32, bf16, fp16
 * tensors; fp64 for fp64), by interval arithmetic over ATen's steps
 * (fused_adam_utils.cuh, FusedSgdKernel.cu, cpu/FusedAdamKernel.cpp,
 * cpu/FusedSGDKernel.cpp), where every operation's result is widened by
 * u |result| + eta (one rounding, with its underflow floor; an operation
 * done in double, or a fused multiply-add, rounds less and stays inside)
 * and every constant the kernel derives from the attrs (beta, 1 - beta,
 * lr wd, eps, lr / bc1, sqrt(bc2), 1 - dampening) carries one rounding to
 * the compute type plus the double arithmetic before it (pow within 2 ulps,
 * CUDA's double pow budget; glibc's is tighter). Where the kernels differ
 * the hull of the forms is taken: exp_avg as beta1 m + (1 - beta1) g or as
 * a lerp m + (1 - beta1)(g - m); exp_avg_sq with g g (1 - beta2) in either
 * association or as a lerp; the denominator sqrt(V) / sqrt(bc2) + eps or
 * sqrt(V / bc2) + eps; the step (lr / bc1) m / d in any association; and,
 * for 16-bit tensors, exp_avg and V (and the momentum buffer) rounded to
 * the tensor's type before the parameter update reads them (the CPU
 * kernels store and reread them) or not. The interval's distance from the
 * exact value (times 1 + 2^-8 for the second-order terms of reassociated
 * products, plus the interval arithmetic's own double roundings, 2^-49
 * relative per step) is the bound before the output's rounding
 * (oc_out_bound). Relative to the update, that is a few u: fp16
 * accumulation of exp_avg_sq (2^-11), a missing bias correction or a
 * dropped term are far outside.
 *
 * Non-finite inputs, or intervals that are not finite (a zero denominator,
 * an overflow, a second moment that may be negative): the formula in IEEE
 * double and float; a kernel value equal
 * to either passes, another is inconclusive (no bound derived). found_inf
 * nonzero: the old value, bit for bit. */
#include <float.h>
#include <math.h>
#include <mpfr.h>
#include <string.h>

#include "bounds.h"
#include "ops.h"
#include "oracle.h"
#include "verdict.h"

#define WPREC 256
#define PAD 0x1p-49 /* the interval arithmetic's own double roundings, relative */

struct iv {
  double lo, hi;
};

struct octx {
  double u, eta;   /* the compute type's unit roundoff and underflow floor per rounding */
  double uo, etao; /* the tensor's type (16-bit tensors: stored and reread) */
  int narrow;
  int dbl;
};

static double mag(struct iv a) { return fmax(fabs(a.lo), fabs(a.hi)); }

static struct iv pad(double lo, double hi) {
  double m = fmax(fabs(lo), fabs(hi)) * PAD + 0x1p-1060;
  return (struct iv){lo - m, hi + m};
}

static struct iv pt(double x) { return (struct iv){x, x}; }
static struct iv ivneg(struct iv a) { return (struct iv){-a.hi, -a.lo}; }
static struct iv add(struct iv a, struct iv b) { return pad(a.lo + b.lo, a.hi + b.hi); }
static struct iv sub(struct iv a, struct iv b) { return pad(a.lo - b.hi, a.hi - b.lo); }

static struct iv mul(struct iv a, struct iv b) {
  double p[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
  double lo = p[0], hi = p[0];
  for (int k = 1; k < 4; k++)
    lo = fmin(lo, p[k]), hi = fmax(hi, p[k]);
  return pad(lo, hi);
}

static struct iv dv(struct iv a, struct iv b) {
  if (!(b.lo > 0 || b.hi < 0)) return (struct iv){-INFINITY, INFINITY};
  return mul(a, pad(1 / b.hi, 1 / b.lo));
}

static struct iv sq(struct iv a) {
  if (a.lo >= 0) return pad(a.lo * a.lo, a.hi * a.hi);
  if (a.hi <= 0) return pad(a.hi * a.hi, a.lo * a.lo);
  return pad(0, fmax(a.lo * a.lo, a.hi * a.hi));
}

static struct iv ivsqrt(struct iv a) {
  return pad(a.lo > 0 ? sqrt(a.lo) : 0, a.hi > 0 ? sqrt(a.hi) : 0);
}

static struct iv ivmax(struct iv a, struct iv b) {
  return (struct iv){fmax(a.lo, b.lo), fmax(a.hi, b.hi)};
}

static struct iv hull(struct iv a, struct iv b) {
  return (struct iv){fmin(a.lo, b.lo), fmax(a.hi, b.hi)};
}

/* One rounding to the compute type (rel u, floor eta). */
static struct iv rnd(const struct octx *c, struct iv a) {
  double e = c->u * mag(a) + c->eta;
  return pad(a.lo - e, a.hi + e);
}

/* Stored in the tensor's type and reread (16-bit tensors), or not. */
static struct iv stored(const struct octx *c, struct iv a) {
  if (!c->narrow) return a;
  double e = c->uo * mag(a) + c->etao;
  return pad(a.lo - e, a.hi + e);
}

/* A constant the kernel derives from doubles (k double roundings) and
 * rounds to the compute type (no rounding when it is exact there). */
static struct iv cst(const struct octx *c, double v, int k) {
  double r = k * 0x1p-53 + (c->dbl || (double)(float)v == v ? 0 : c->u);
  return pad(v - r * fabs(v), v + r * fabs(v));
}

/* 1 - v as the kernel holds it: computed in double and rounded to the
 * compute type (cst), or computed there from v already rounded to it
 * (ATen's CUDA fused Adam: 1 - beta1 with beta1 a float; measured on the
 * H100: 1 - 0.9f = 0.100000024, 3.7 ulps from 0.1f, and 1 - 0.999f is
 * 1.3e-5 relative from 0.001). k: the double roundings inside v. */
static struct iv one_minus(const struct octx *c, struct iv v, double exact_v, int k) {
  return hull(cst(c, 1 - exact_v, k + 1), rnd(c, sub(pt(1), v)));
}

/* 1 - beta^t as the kernel holds it: pow within 2 ulps of double (and
 * this libm's within 1 more), the subtraction, the rounding to the
 * compute type. */
static struct iv bias_corr(const struct octx *c, double beta, double t) {
  double bt = pow(beta, t), b = 1 - bt;
  double e = 8 * 0x1p-53 * fabs(bt) + 2 * 0x1p-53 * fabs(b);
  return rnd(c, pad(b - e, b + e));
}

/* ------------------------------------------------------------ exact */

struct ex {
  mpfr_t g, m, v, vmax, p1, step, buf, pw, t, bc;
};

static void ex_init(struct ex *x) {
  mpfr_inits2(WPREC, x->g, x->m, x->v, x->vmax, x->p1, x->step, x->buf, x->pw, x->t, x->bc,
              (mpfr_ptr)0);
}

static void ex_clear(struct ex *x) {
  mpfr_clears(x->g, x->m, x->v, x->vmax, x->p1, x->step, x->buf, x->pw, x->t, x->bc, (mpfr_ptr)0);
}

/* The element's inputs (unused ones 0). */
struct in {
  double p, g, m, v, vmax, b, s, t;
};

/* The exact output into x->t (finite inputs). */
static void exact_out(enum oc_optim_op op, const struct oc_optim_args *a, const struct in *e,
                      struct ex *x) {
  mpfr_rnd_t r = MPFR_RNDN;
  mpfr_set_d(x->g, e->g, r);
  mpfr_div_d(x->g, x->g, e->s, r);
  if (a->maximize) mpfr_neg(x->g, x->g, r);
  if (op != OC_OPTIM_ADAMW && a->weight_decay != 0) {
    mpfr_set_d(x->t, e->p, r);
    mpfr_mul_d(x->t, x->t, a->weight_decay, r);
    mpfr_add(x->g, x->g, x->t, r);
  }
  if (op == OC_OPTIM_SGD) {
    if (a->momentum_buffer && !a->first_step) { /* momentum b + (1 - dampening) g */
      mpfr_set_d(x->buf, e->b, r);
      mpfr_mul_d(x->buf, x->buf, a->momentum, r);
      mpfr_set_d(x->t, a->dampening, r);
      mpfr_ui_sub(x->t, 1, x->t, r);
      mpfr_mul(x->t, x->t, x->g, r);
      mpfr_add(x->buf, x->buf, x->t, r);
    } else {
      mpfr_set(x->buf, x->g, r);
    }
    if (a->output == OC_OPTIM_OUT_MOMENTUM_BUFFER) {
      mpfr_set(x->t, x->buf, r);
      return;
    }
    if (!a->momentum_buffer)
      mpfr_set(x->t, x->g, r);
    else if (a->nesterov) {
      mpfr_mul_d(x->t, x->buf, a->momentum, r);
      mpfr_add(x->t, x->t, x->g, r);
    } else
      mpfr_set(x->t, x->buf, r);
    mpfr_mul_d(x->t, x->t, a->lr, r);
    mpfr_d_sub(x->t, e->p, x->t, r);
    return;
  }
  /* exp_avg' = beta1 m + (1 - beta1) g */
  mpfr_set_d(x->t, a->beta1, r);
  mpfr_ui_sub(x->t, 1, x->t, r);
  mpfr_mul(x->m, x->t, x->g, r);
  mpfr_set_d(x->t, e->m, r);
  mpfr_mul_d(x->t, x->t, a->beta1, r);
  mpfr_add(x->m, x->m, x->t, r);
  /* exp_avg_sq' = beta2 v + (1 - beta2) g^2 */
  mpfr_set_d(x->t, a->beta2, r);
  mpfr_ui_sub(x->t, 1, x->t, r);
  mpfr_sqr(x->v, x->g, r);
  mpfr_mul(x->v, x->v, x->t, r);
  mpfr_set_d(x->t, e->v, r);
  mpfr_mul_d(x->t, x->t, a->beta2, r);
  mpfr_add(x->v, x->v, x->t, r);
  mpfr_set_d(x->vmax, e->vmax, r);
  mpfr_max(x->vmax, x->vmax, x->v, r);
  switch (a->output) {
  case OC_OPTIM_OUT_EXP_AVG: mpfr_set(x->t, x->m, r); return;
  case OC_OPTIM_OUT_EXP_AVG_SQ: mpfr_set(x->t, x->v, r); return;
  case OC_OPTIM_OUT_MAX_EXP_AVG_SQ: mpfr_set(x->t, x->vmax, r); return;
  default: break;
  }
  /* d = sqrt(V) / sqrt(1 - beta2^t) + eps */
  mpfr_sqrt(x->t, a->amsgrad ? x->vmax : x->v, r);
  mpfr_set_d(x->pw, a->beta2, r);
  mpfr_set_d(x->step, e->t, r);
  mpfr_pow(x->bc, x->pw, x->step, r);
  mpfr_ui_sub(x->bc, 1, x->bc, r);
  mpfr_sqrt(x->bc, x->bc, r);
  mpfr_div(x->t, x->t, x->bc, r);
  mpfr_add_d(x->t, x->t, a->eps, r);
  /* step = lr / (1 - beta1^t) m' / d */
  mpfr_div(x->t, x->m, x->t, r);
  mpfr_set_d(x->pw, a->beta1, r);
  mpfr_pow(x->bc, x->pw, x->step, r);
  mpfr_ui_sub(x->bc, 1, x->bc, r);
  mpfr_div(x->t, x->t, x->bc, r);
  mpfr_mul_d(x->t, x->t, a->lr, r);
  mpfr_set_d(x->p1, e->p, r);
  if (op == OC_OPTIM_ADAMW) { /* p - lr wd p */
    mpfr_mul_d(x->pw, x->p1, a->lr, r);
    mpfr_mul_d(x->pw, x->pw, a->weight_decay, r);
    mpfr_sub(x->p1, x->p1, x->pw, r);
  }
  mpfr_sub(x->t, x->p1, x->t, r);
}

/* ------------------------------------------------------------ kernel */

/* The interval of the kernel's value before the output's rounding; *mags
 * the magnitudes the exact evaluation's error scales with. */
static struct iv kernel_iv(enum oc_optim_op op, const struct oc_optim_args *a, const struct in *e,
                           const struct octx *c, double *mags) {
  struct iv g = pt(e->g);
  if (e->s != 1) g = rnd(c, dv(g, pt(e->s)));
  if (a->maximize) g = ivneg(g);
  if (op != OC_OPTIM_ADAMW && a->weight_decay != 0)
    g = rnd(c, add(g, rnd(c, mul(cst(c, a->weight_decay, 0), pt(e->p)))));
  *mags = mag(g) + fabs(e->p);
  int final_rnd = c->narrow; /* the compute type's rounding, then the output's */
  if (op == OC_OPTIM_SGD) {
    struct iv buf = g;
    if (a->momentum_buffer && !a->first_step) { /* momentum b + (1 - dampening) g */
      struct iv cd = one_minus(c, cst(c, a->dampening, 0), a->dampening, 0);
      buf = rnd(c, add(rnd(c, mul(cst(c, a->momentum, 0), pt(e->b))), rnd(c, mul(cd, g))));
    }
    *mags += mag(buf) + fabs(e->b);
    if (a->output == OC_OPTIM_OUT_MOMENTUM_BUFFER) return buf; /* rounded once already */
    struct iv d = g;
    if (a->momentum_buffer) {
      struct iv bs = hull(buf, stored(c, buf));
      d = a->nesterov ? rnd(c, add(g, rnd(c, mul(cst(c, a->momentum, 0), bs)))) : bs;
    }
    struct iv step = rnd(c, mul(cst(c, a->lr, 0), d));
    *mags += mag(step);
    struct iv pn = sub(pt(e->p), step);
    return final_rnd ? rnd(c, pn) : pn;
  }
  double w1 = 1 - a->beta1;
  struct iv b1 = cst(c, a->beta1, 0), b2 = cst(c, a->beta2, 0);
  struct iv cw1 = one_minus(c, b1, a->beta1, 0), cw2 = one_minus(c, b2, a->beta2, 0);
  /* exp_avg: beta1 m + w1 g, or the lerp m + w1 (g - m) (w1 < 0.5), or
   * g - beta1 (g - m) (its other branch) */
  struct iv m = pt(e->m);
  struct iv md = add(rnd(c, mul(b1, m)), rnd(c, mul(cw1, g)));
  struct iv ml = w1 < 0.5 ? add(m, rnd(c, mul(cw1, rnd(c, sub(g, m)))))
                          : sub(g, rnd(c, mul(b1, rnd(c, sub(g, m)))));
  struct iv m1 = hull(md, ml);
  /* exp_avg_sq: beta2 v + (g g) w2, g (g w2), or v + w2 (g^2 - v) */
  struct iv v = pt(e->v), g2 = rnd(c, sq(g));
  struct iv gw = hull(rnd(c, mul(g2, cw2)), rnd(c, mul(rnd(c, mul(g, cw2)), g)));
  struct iv vd = add(rnd(c, mul(b2, v)), gw);
  struct iv vl = add(v, rnd(c, mul(cw2, rnd(c, sub(g2, v)))));
  struct iv v1 = hull(vd, vl);
  *mags += mag(m1) + mag(v1) + fabs(e->m) + fabs(e->v) + fabs(e->vmax);
  if (a->output == OC_OPTIM_OUT_EXP_AVG) return final_rnd ? rnd(c, m1) : m1;
  if (a->output == OC_OPTIM_OUT_EXP_AVG_SQ) return final_rnd ? rnd(c, v1) : v1;
  v1 = rnd(c, v1);
  m1 = rnd(c, m1);
  struct iv vm = ivmax(pt(e->vmax), v1);
  if (a->output == OC_OPTIM_OUT_MAX_EXP_AVG_SQ) return vm;
  struct iv V = hull(a->amsgrad ? vm : v1, stored(c, a->amsgrad ? vm : v1));
  /* a second moment that may be negative (state no optimizer writes):
   * sqrt's NaN or not, IEEE's formula decides (the caller's special path) */
  if (V.lo < 0) return (struct iv){-INFINITY, INFINITY};
  m1 = hull(m1, stored(c, m1));
  struct iv bc1 = bias_corr(c, a->beta1, e->t), bc2 = bias_corr(c, a->beta2, e->t);
  struct iv bc2s = rnd(c, ivsqrt(bc2)), ceps = cst(c, a->eps, 0);
  struct iv den = hull(add(rnd(c, dv(rnd(c, ivsqrt(V)), bc2s)), ceps),
                       add(rnd(c, ivsqrt(rnd(c, dv(V, bc2)))), ceps));
  den = rnd(c, den);
  struct iv ss = rnd(c, dv(cst(c, a->lr, 0), bc1)); /* lr / bc1 */
  struct iv st = hull(rnd(c, dv(rnd(c, mul(ss, m1)), den)), rnd(c, mul(ss, rnd(c, dv(m1, den)))));
  st = hull(st, rnd(c, mul(m1, rnd(c, dv(ss, den)))));
  struct iv p1 = pt(e->p);
  if (op == OC_OPTIM_ADAMW && a->weight_decay != 0) {
    /* lr wd from doubles, or the product of lr and wd rounded first */
    struct iv lw = hull(cst(c, a->lr * a->weight_decay, 2),
                        rnd(c, mul(cst(c, a->lr, 0), cst(c, a->weight_decay, 0))));
    p1 = hull(rnd(c, sub(p1, rnd(c, mul(lw, p1)))),
              rnd(c, mul(p1, one_minus(c, lw, a->lr * a->weight_decay, 2))));
  }
  *mags += mag(st) + mag(p1) + mag(den) + mag(ss);
  struct iv pn = sub(p1, st);
  return final_rnd ? rnd(c, pn) : pn;
}

/* The formula in IEEE arithmetic (float when fl), for non-finite cases. */
static double ieee(enum oc_optim_op op, const struct oc_optim_args *a, const struct in *e, int fl) {
#define F(x) (fl ? (double)(float)(x) : (x))
  double g = F(e->g / e->s);
  if (a->maximize) g = -g;
  if (op != OC_OPTIM_ADAMW && a->weight_decay != 0) g = F(g + F(a->weight_decay * e->p));
  if (op == OC_OPTIM_SGD) {
    double b = (a->momentum_buffer && !a->first_step)
                   ? F(F(a->momentum * e->b) + F((1 - a->dampening) * g))
                   : g;
    if (a->output == OC_OPTIM_OUT_MOMENTUM_BUFFER) return b;
    double d = !a->momentum_buffer ? g : a->nesterov ? F(g + F(a->momentum * b)) : b;
    return F(e->p - F(a->lr * d));
  }
  double m = F(F(a->beta1 * e->m) + F((1 - a->beta1) * g));
  double v = F(F(a->beta2 * e->v) + F(F(g * g) * (1 - a->beta2)));
  double vm = v != v ? v : fmax(e->vmax, v);
  if (a->output == OC_OPTIM_OUT_EXP_AVG) return m;
  if (a->output == OC_OPTIM_OUT_EXP_AVG_SQ) return v;
  if (a->output == OC_OPTIM_OUT_MAX_EXP_AVG_SQ) return vm;
  double bc1 = 1 - pow(a->beta1, e->t), bc2 = sqrt(1 - pow(a->beta2, e->t));
  double den = F(F(sqrt(a->amsgrad ? vm : v)) / bc2 + a->eps);
  double p1 = e->p;
  if (op == OC_OPTIM_ADAMW) p1 = F(p1 - F(a->lr * a->weight_decay * p1));
  return F(p1 - F(F(F(a->lr / bc1) * m) / den));
#undef F
}

static int same_value(double x, double y) {
  if (x != x || y != y) return x != x && y != y;
  return x == y && signbit(x) == signbit(y);
}

static int shape_ok(const struct oc_tensor *t, const struct oc_tensor *out) {
  if (!t) return 1;
  if (t->rank != out->rank) return 0;
  for (int d = 0; d < out->rank; d++)
    if (t->shape[d] != out->shape[d] && t->shape[d] != 1) return 0;
  return 1;
}

static double at(const struct oc_tensor *t, const int64_t *idx, double dflt) {
  if (!t) return dflt;
  int64_t off = 0;
  for (int d = 0; d < t->rank; d++)
    if (t->shape[d] != 1) off += idx[d] * t->stride[d];
  return oc_tensor_at(t, off);
}

/* The input tensor the judged output overwrites (its old value). */
static const struct oc_tensor *target(const struct oc_optim_args *a) {
  switch (a->output) {
  case OC_OPTIM_OUT_PARAM: return a->param;
  case OC_OPTIM_OUT_EXP_AVG: return a->exp_avg;
  case OC_OPTIM_OUT_EXP_AVG_SQ: return a->exp_avg_sq;
  case OC_OPTIM_OUT_MAX_EXP_AVG_SQ: return a->max_exp_avg_sq;
  case OC_OPTIM_OUT_MOMENTUM_BUFFER: return a->momentum_buffer;
  }
  return NULL;
}

static int args_ok(enum oc_optim_op op, const struct oc_optim_args *a,
                   const struct oc_tensor *out) {
  if (!a->param || !a->grad || (int)a->output < 0 || a->output > OC_OPTIM_OUT_MOMENTUM_BUFFER)
    return 0;
  int sgd = op == OC_OPTIM_SGD;
  if (sgd ? !(a->output == OC_OPTIM_OUT_PARAM || a->output == OC_OPTIM_OUT_MOMENTUM_BUFFER)
          : (a->output == OC_OPTIM_OUT_MOMENTUM_BUFFER || !a->exp_avg || !a->exp_avg_sq))
    return 0;
  if (!sgd && (a->amsgrad || a->output == OC_OPTIM_OUT_MAX_EXP_AVG_SQ) && !a->max_exp_avg_sq)
    return 0;
  if (sgd && a->output == OC_OPTIM_OUT_MOMENTUM_BUFFER && !a->momentum_buffer) return 0;
  if (sgd && !a->first_step && a->momentum_buffer == NULL && a->momentum != 0) return 0;
  const struct oc_tensor *ts[] = {a->param,      a->grad,           a->exp_avg,
                                  a->exp_avg_sq, a->max_exp_avg_sq, a->momentum_buffer};
  for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++)
    if (!shape_ok(ts[k], out)) return 0;
  const struct oc_tensor *one[] = {a->step, a->grad_scale, a->found_inf};
  for (size_t k = 0; k < 3; k++)
    if (one[k] && oc_tensor_numel(one[k]) < 1) return 0;
  return 1;
}

int oc_check_optim(enum oc_optim_op op, const struct oc_optim_args *a, const struct oc_tensor *out,
                   const struct oc_profile *p, const struct oc_options *o, struct oc_verdict *v) {
  const struct oc_op_info *info = NULL;
  for (int i = 0; i < OC_ID_COUNT && !info; i++) {
    const struct oc_op_info *r = oc_op_by_id((enum oc_opid)i);
    if (r->cls == OC_CLASS_OPTIM && r->kind == (int)op) info = r;
  }
  if (!info || !a || !out || !p || !v || !args_ok(op, a, out)) return -1;
  struct oc_options od;
  if (!o) {
    oc_options_default(&od);
    o = &od;
  }
  struct octx c;
  c.dbl = p->acc == OC_FP64;
  enum oc_format cf = c.dbl ? OC_FP64 : OC_FP32;
  c.u = oc_unit_roundoff(cf);
  c.eta = oc_format_info(cf)->min_subnormal;
  c.narrow = out->fmt != cf;
  c.uo = oc_unit_roundoff(out->fmt);
  c.etao = oc_format_info(out->fmt)->min_subnormal;
  double step = a->step ? oc_tensor_at(a->step, 0) : a->step_value;
  double scale = a->grad_scale ? oc_tensor_at(a->grad_scale, 0) : 1;
  int skipped = a->found_inf && oc_tensor_at(a->found_inf, 0) != 0;
  double top = c.dbl ? DBL_MAX : FLT_MAX;
  const struct oc_tensor *old = target(a);
  struct ex x;
  ex_init(&x);
  struct oc_check chk;
  int64_t total = oc_tensor_numel(out);
  oc_check_init(&chk, info->name, p, o, v, total, out->rank, NULL, NULL);
  int64_t idx[OC_MAX_RANK] = {0};
  for (int64_t n = 0; n < total; n++) {
    struct in e = {at(a->param, idx, 0),
                   at(a->grad, idx, 0),
                   at(a->exp_avg, idx, 0),
                   at(a->exp_avg_sq, idx, 0),
                   at(a->max_exp_avg_sq, idx, 0),
                   a->first_step ? 0 : at(a->momentum_buffer, idx, 0),
                   scale,
                   step};
    struct oc_elem el;
    memset(&el, 0, sizeof el);
    int64_t oo = 0;
    for (int d = 0; d < out->rank; d++)
      oo += idx[d] * out->stride[d];
    el.k = oc_tensor_at(out, oo);
    el.prob = INFINITY;
    double mags = 0;
    struct iv k = {0, 0};
    int fin = isfinite(e.p) && isfinite(e.g) && isfinite(e.m) && isfinite(e.v) &&
              isfinite(e.vmax) && isfinite(e.b) && isfinite(e.s) && e.s != 0 && isfinite(step);
    if (!skipped && fin) k = kernel_iv(op, a, &e, &c, &mags);
    if (skipped) { /* the step skipped: the old value, bit for bit */
      el.lo = el.hi = oc_round(out->fmt, at(old, idx, 0), p->out_ovf);
      el.exact_only = 1;
      el.zero_sign = 1;
    } else if (!fin || !(isfinite(k.lo) && isfinite(k.hi)) || mag(k) > top) {
      double r = oc_round(out->fmt, ieee(op, a, &e, 0), p->out_ovf);
      el.lo = el.hi = r;
      el.exact_only = 1;
      if (!same_value(el.k, r) && !c.dbl &&
          same_value(el.k, oc_round(out->fmt, ieee(op, a, &e, 1), p->out_ovf)))
        el.alt_ok = 1;
      if (!same_value(el.k, r) && !el.alt_ok) {
        v->checked++;
        oc_check_inconclusive(&chk, "a non-finite input or intermediate: no bound for the update");
        goto next;
      }
    } else {
      exact_out(op, a, &e, &x);
      double slack = oc_mul_up(mags, 0x1p-230);
      el.lo = oc_down(mpfr_get_d(x.t, MPFR_RNDD) - slack);
      el.hi = oc_up(mpfr_get_d(x.t, MPFR_RNDU) + slack);
      double b = fmax(k.hi - el.lo, el.hi - k.lo);
      b = oc_add_up(oc_mul_up(fmax(b, 0), 1 + 0x1p-8), 2 * slack);
      el.pre = b;
      el.pre_set = 1;
      el.bound = oc_out_bound(p, fmax(fabs(el.lo), fabs(el.hi)), b);
      if (el.bound != el.bound) el.bound = INFINITY;
      el.ovf_ok = !(mag(k) * 1.01 < oc_overflow_threshold(out->fmt));
    }
    oc_check_elem(&chk, &el, idx);
  next:
    for (int d = out->rank - 1; d >= 0; d--) {
      if (++idx[d] < out->shape[d]) break;
      idx[d] = 0;
    }
  }
  ex_clear(&x);
  oc_check_finish(&chk, 0);
  return 0;
}
