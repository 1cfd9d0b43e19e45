/* test/oracle/test_b_conv.c — convolution (oc_check_conv): 1-d, 2-d and
 * 3-d convolutions with stride, padding, dilation, groups and a bias, and
 * their input, weight and bias gradients and the transposed convolution,
 * computed here by loops of their own in the summation orders GPU and CPU
 * kernels take, pass (TF32-rounded operands under the tf32 profile too);
 * a padding dropped at the border, a wrong stride, fp16 accumulation at
 * K = 576, a missing bias, an unflipped kernel in the input gradient and a
 * dropped batch in the weight gradient fail. Under algorithm `any` an
 * error beyond the dot-product bound is inconclusive, a NaN from finite
 * inputs still fails. */
#include "test_b_util.h"

#define MAXT 4096

enum bug { OK, NO_PAD, STRIDE1, NO_BIAS, FLIP, DROP_N, TF32_IN };

struct conv {
  int nsp;
  int64_t s[3], p[3], d[3], groups;
};

/* A tensor of exactly representable values in format f. */
struct tt {
  enum oc_format f;
  int rank;
  int64_t sh[5];
  double v[20000];
  unsigned char buf[20000 * 8];
  struct oc_tensor t;
};

static uint64_t rng = 88172645463325252ull;
static double urand(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (double)(rng >> 11) * 0x1p-53;
}

static int64_t numel(const struct tt *x) {
  int64_t n = 1;
  for (int d = 0; d < x->rank; d++)
    n *= x->sh[d];
  return n;
}

/* lo + (hi - lo) u, rounded to f. */
static void fill(struct tt *x, enum oc_format f, int rank, const int64_t *sh, double lo,
                 double hi) {
  x->f = f, x->rank = rank;
  memcpy(x->sh, sh, (size_t)rank * sizeof *sh);
  for (int64_t i = 0; i < numel(x); i++)
    x->v[i] = t_rnd(f, lo + (hi - lo) * urand());
}

static void seal(struct tt *x) {
  for (int64_t i = 0; i < numel(x); i++)
    t_put(x->buf, x->f, i, x->v[i]);
  oc_tensor_make(&x->t, x->buf, x->f, x->rank, x->sh, NULL);
}

static int64_t off(const struct tt *x, const int64_t *idx) {
  int64_t o = 0;
  for (int d = 0; d < x->rank; d++)
    o = o * x->sh[d] + idx[d];
  return o;
}

static double tf32(double v) { return t_rnd(OC_TF32, v); }

/* Term lists per output element, filled in any order, summed per sim. */
static int64_t nterm[MAXT];
static double ta[MAXT][640], tb[MAXT][640];

static void add_term(int64_t e, double a, double b) {
  if (nterm[e] < 640) ta[e][nterm[e]] = a, tb[e][nterm[e]++] = b;
}

/* Spatial coordinates of flat f over sz. */
static void unflat(int nsp, const int64_t *sz, int64_t f, int64_t *c) {
  for (int d = nsp - 1; d >= 0; d--)
    c[d] = f % sz[d], f /= sz[d];
}

static int64_t vol(int nsp, const int64_t *sz) {
  int64_t v = 1;
  for (int d = 0; d < nsp; d++)
    v *= sz[d];
  return v;
}

/* out = reduce(terms) (+ bias) in sim order, rounded to out's format. */
static void finish(struct tt *out, enum t_sim sim, const struct tt *bias, int64_t ch_dim,
                   enum bug bug) {
  int64_t n = numel(out);
  for (int64_t e = 0; e < n; e++) {
    double acc = t_sim_dot(sim, ta[e], tb[e], nterm[e]);
    if (bias && bug != NO_BIAS) {
      int64_t c = (e / vol(out->rank - 2, out->sh + 2)) % out->sh[ch_dim];
      acc = (float)(acc + bias->v[c]);
    }
    out->v[e] = t_rnd(out->f, acc);
  }
  seal(out);
}

/* conv forward: out [N, O, *] from x [N, C, *], w [O, C/G, *k]; terms in
 * im2col order (channel, then tap), padding taps as zero products. */
static void conv_fwd(const struct conv *cv, const struct tt *x, const struct tt *w,
                     const struct tt *bias, struct tt *out, enum t_sim sim, enum bug bug) {
  int nsp = cv->nsp;
  int64_t N = x->sh[0], C = x->sh[1], O = w->sh[0], Cg = C / cv->groups, Og = O / cv->groups;
  const int64_t *is = x->sh + 2, *ks = w->sh + 2, *os = out->sh + 2;
  memset(nterm, 0, sizeof nterm);
  for (int64_t n = 0; n < N; n++)
    for (int64_t o = 0; o < O; o++)
      for (int64_t f = 0; f < vol(nsp, os); f++) {
        int64_t q[3], e = (n * O + o) * vol(nsp, os) + f;
        unflat(nsp, os, f, q);
        for (int64_t c = 0; c < Cg; c++)
          for (int64_t kf = 0; kf < vol(nsp, ks); kf++) {
            int64_t k[3], xi[5] = {n, (o / Og) * Cg + c}, wi[5] = {o, c};
            unflat(nsp, ks, kf, k);
            int in = 1;
            for (int d = 0; d < nsp; d++) {
              int64_t st = bug == STRIDE1 ? 1 : cv->s[d], pd = bug == NO_PAD ? 0 : cv->p[d];
              xi[2 + d] = q[d] * st - pd + k[d] * cv->d[d];
              in &= xi[2 + d] >= 0 && xi[2 + d] < is[d];
              wi[2 + d] = k[d];
            }
            double a = in ? x->v[off(x, xi)] : 0, b = w->v[off(w, wi)];
            if (bug == TF32_IN) a = tf32(a), b = tf32(b);
            add_term(e, a, b);
          }
      }
  finish(out, sim, bias, 1, bug);
}

/* Scatter form shared by the input gradient (g [N, O, *], w [O, C/G, *k]
 * -> [N, C, *]) and the transposed convolution (x [N, C, *], w [C, O/G,
 * *k] -> [N, O, *]): every (source position, tap) adds its product to the
 * target position it reaches. */
static void conv_scatter(const struct conv *cv, const struct tt *src, const struct tt *w,
                         const struct tt *bias, struct tt *out, enum t_sim sim, enum bug bug) {
  int nsp = cv->nsp;
  int64_t N = src->sh[0], S = src->sh[1], T = out->sh[1];
  int64_t Sg = S / cv->groups, Tg = T / cv->groups;
  const int64_t *ss = src->sh + 2, *ks = w->sh + 2, *ts = out->sh + 2;
  memset(nterm, 0, sizeof nterm);
  for (int64_t n = 0; n < N; n++)
    for (int64_t sc = 0; sc < S; sc++)
      for (int64_t f = 0; f < vol(nsp, ss); f++) {
        int64_t q[3];
        unflat(nsp, ss, f, q);
        for (int64_t tl = 0; tl < Tg; tl++)
          for (int64_t kf = 0; kf < vol(nsp, ks); kf++) {
            int64_t k[3], tc = (sc / Sg) * Tg + tl, tf = 0, wi[5];
            unflat(nsp, ks, kf, k);
            wi[0] = sc, wi[1] = tl; /* w's first dim is the source's either way */
            int in = 1;
            for (int d = 0; d < nsp; d++) {
              int64_t t = q[d] * cv->s[d] - cv->p[d] + k[d] * cv->d[d];
              in &= t >= 0 && t < ts[d];
              tf = tf * ts[d] + t;
              wi[2 + d] = bug == FLIP ? ks[d] - 1 - k[d] : k[d];
            }
            if (!in) continue;
            int64_t si[5] = {n, sc, q[0], q[1], q[2]};
            add_term((n * T + tc) * vol(nsp, ts) + tf, src->v[off(src, si)], w->v[off(w, wi)]);
          }
      }
  finish(out, sim, bias, 1, bug);
}

/* Weight gradient [O, C/G, *k] from g [N, O, *], x [N, C, *]. */
static void conv_wgrad(const struct conv *cv, const struct tt *g, const struct tt *x,
                       struct tt *out, enum t_sim sim, enum bug bug) {
  int nsp = cv->nsp;
  int64_t N = g->sh[0], O = g->sh[1], Cg = out->sh[1], Og = O / cv->groups;
  const int64_t *gs = g->sh + 2, *xs = x->sh + 2, *ks = out->sh + 2;
  memset(nterm, 0, sizeof nterm);
  for (int64_t o = 0; o < O; o++)
    for (int64_t c = 0; c < Cg; c++)
      for (int64_t kf = 0; kf < vol(nsp, ks); kf++) {
        int64_t k[3], e = (o * Cg + c) * vol(nsp, ks) + kf;
        unflat(nsp, ks, kf, k);
        for (int64_t n = 0; n < N - (bug == DROP_N); n++)
          for (int64_t f = 0; f < vol(nsp, gs); f++) {
            int64_t q[3], xi[5] = {n, (o / Og) * Cg + c}, gi[5] = {n, o};
            unflat(nsp, gs, f, q);
            int in = 1;
            for (int d = 0; d < nsp; d++) {
              xi[2 + d] = q[d] * cv->s[d] - cv->p[d] + k[d] * cv->d[d];
              in &= xi[2 + d] >= 0 && xi[2 + d] < xs[d];
              gi[2 + d] = q[d];
            }
            add_term(e, g->v[off(g, gi)], in ? x->v[off(x, xi)] : 0);
          }
      }
  finish(out, sim, NULL, 0, bug);
}

static struct oc_verdict judge(enum oc_conv_op op, const struct conv *cv, const struct tt *a,
                               const struct tt *b, const struct tt *bias, const struct tt *out,
                               const char *prof, enum oc_conv_alg alg) {
  struct oc_profile p;
  struct oc_verdict v;
  memset(&v, 0, sizeof v);
  if (oc_profile_parse(prof, &p)) {
    v.kind = OC_INCONCLUSIVE;
    return v;
  }
  struct oc_conv_args ca = {
      &a->t, b ? &b->t : NULL, bias ? &bias->t : NULL, {0}, {0}, {0}, cv->groups, alg};
  for (int d = 0; d < 3; d++)
    ca.stride[d] = cv->s[d], ca.padding[d] = cv->p[d], ca.dilation[d] = cv->d[d];
  struct oc_options o;
  oc_options_default(&o);
  if (oc_check_conv(op, &ca, &out->t, &p, &o, &v)) v.kind = (enum oc_verdict_kind) - 1;
  return v;
}

static int passes(const struct oc_verdict *v) {
  return v->kind == OC_PASS || v->kind == OC_BITWISE;
}
static int fails(const struct oc_verdict *v) {
  return v->kind == OC_FAIL_VALUE || v->kind == OC_FAIL_PRECISION || v->kind == OC_FAIL_SPECIAL;
}

static struct tt X, W, B, G, OUT;

static int64_t conv_len(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

/* Shapes of one case: x [N, C, *is], w [O, C/G, *ks], out by PyTorch's formula. */
static void shapes(const struct conv *cv, enum oc_format f, int64_t N, int64_t C, int64_t O,
                   const int64_t *is, const int64_t *ks, double lo) {
  int nsp = cv->nsp;
  int64_t xs[5] = {N, C}, ws[5] = {O, C / cv->groups}, os[5] = {N, O}, bs[1] = {O};
  for (int d = 0; d < nsp; d++) {
    xs[2 + d] = is[d], ws[2 + d] = ks[d];
    os[2 + d] = conv_len(is[d], ks[d], cv->s[d], cv->p[d], cv->d[d]);
  }
  fill(&X, f, nsp + 2, xs, lo, 1);
  fill(&W, f, nsp + 2, ws, lo, 1);
  fill(&B, f, 1, bs, -1, 1);
  fill(&OUT, f, nsp + 2, os, 0, 0);
  fill(&G, f, nsp + 2, os, lo, 1);
  seal(&X), seal(&W), seal(&B), seal(&G);
}

static const enum t_sim good[] = {SIM_FP32_SEQ, SIM_FP32_FMA, SIM_FP32_PAIRWISE, SIM_FP32_SPLITK,
                                  SIM_FP32_REVERSE};

static void forward_cases(void) {
  static const struct {
    const char *what;
    struct conv cv;
    int64_t N, C, O, is[3], ks[3];
  } cs[] = {
      {"2-d stride 2 padding 1 groups 2", {2, {2, 2}, {1, 1}, {1, 1}, 2}, 2, 6, 4, {7, 9}, {3, 3}},
      {"2-d stride (1,2) padding (2,0) dilation 2",
       {2, {1, 2}, {2, 0}, {2, 2}, 1},
       1,
       3,
       5,
       {8, 9},
       {3, 2}},
      {"1-d stride 3 padding 2 dilation 2 groups 2", {1, {3}, {2}, {2}, 2}, 3, 4, 6, {20}, {5}},
      {"3-d padding 1", {3, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1}, 1, 2, 2, {4, 5, 3}, {2, 3, 2}},
      {"2-d depthwise", {2, {1, 1}, {1, 1}, {1, 1}, 4}, 2, 4, 8, {6, 6}, {3, 3}},
  };
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
    int bad = t_fail;
    shapes(&cs[i].cv, OC_FP32, cs[i].N, cs[i].C, cs[i].O, cs[i].is, cs[i].ks, -1);
    for (size_t s = 0; s < sizeof good / sizeof good[0]; s++)
      for (int withb = 0; withb < 2; withb++) {
        conv_fwd(&cs[i].cv, &X, &W, withb ? &B : NULL, &OUT, good[s], OK);
        struct oc_verdict v = judge(OC_CONV_OP_CONV, &cs[i].cv, &X, &W, withb ? &B : NULL, &OUT,
                                    "fp32", OC_CONV_DIRECT);
        EXPECT(passes(&v), "%s, %s, bias %d: %s", cs[i].what, t_sim_name[good[s]], withb,
               oc_verdict_name(v.kind));
        if (!passes(&v)) t_print_verdict(&v);
      }
    /* the bugs */
    static const enum bug bugs[] = {NO_PAD, STRIDE1, NO_BIAS};
    static const char *const bug_name[] = {"padding dropped", "stride 1", "bias missing"};
    for (int b = 0; b < 3; b++) {
      if (bugs[b] == STRIDE1 && cs[i].cv.s[0] == 1 && cs[i].cv.s[cs[i].cv.nsp - 1] == 1) continue;
      conv_fwd(&cs[i].cv, &X, &W, &B, &OUT, SIM_FP32_SEQ, bugs[b]);
      struct oc_verdict v =
          judge(OC_CONV_OP_CONV, &cs[i].cv, &X, &W, &B, &OUT, "fp32", OC_CONV_DIRECT);
      EXPECT(fails(&v), "%s, %s: %s", cs[i].what, bug_name[b], oc_verdict_name(v.kind));
    }
    t_line(cs[i].what, bad);
  }
}

/* TF32: operands rounded to tf32, fp32 accumulation (cuDNN with
 * cudnn.allow_tf32, PyTorch's default): within the tf32 profile, beyond
 * fp32's; under algorithm any that is inconclusive, not a failure. */
static void tf32_cases(void) {
  int bad = t_fail;
  struct conv cv = {2, {1, 1}, {1, 1}, {1, 1}, 1};
  int64_t is[2] = {6, 7}, ks[2] = {3, 3};
  shapes(&cv, OC_FP32, 2, 8, 4, is, ks, 0);
  for (size_t s = 0; s < sizeof good / sizeof good[0]; s++) {
    conv_fwd(&cv, &X, &W, &B, &OUT, good[s], TF32_IN);
    struct oc_verdict v =
        judge(OC_CONV_OP_CONV, &cv, &X, &W, &B, &OUT, "tensorcore_tf32:ftz=1", OC_CONV_DIRECT);
    EXPECT(passes(&v), "tf32 %s: %s", t_sim_name[good[s]], oc_verdict_name(v.kind));
    v = judge(OC_CONV_OP_CONV, &cv, &X, &W, &B, &OUT, "tf32", OC_CONV_DIRECT);
    EXPECT(passes(&v), "tf32 preset %s: %s", t_sim_name[good[s]], oc_verdict_name(v.kind));
  }
  conv_fwd(&cv, &X, &W, &B, &OUT, SIM_FP32_SEQ, TF32_IN);
  struct oc_verdict v = judge(OC_CONV_OP_CONV, &cv, &X, &W, &B, &OUT, "fp32", OC_CONV_DIRECT);
  EXPECT(fails(&v), "tf32 operands under fp32: %s", oc_verdict_name(v.kind));
  v = judge(OC_CONV_OP_CONV, &cv, &X, &W, &B, &OUT, "fp32", OC_CONV_ANY);
  EXPECT(v.kind == OC_INCONCLUSIVE && strstr(v.detail, "Winograd"),
         "tf32 operands under fp32, algorithm any: %s (%s)", oc_verdict_name(v.kind), v.detail);
  /* a wrong value under any: beyond the bound, inconclusive too (no proof
   * against a transform's error); NaN from finite inputs still fails */
  conv_fwd(&cv, &X, &W, &B, &OUT, SIM_FP32_SEQ, OK);
  v = judge(OC_CONV_OP_CONV, &cv, &X, &W, &B, &OUT, "fp32", OC_CONV_ANY);
  EXPECT(passes(&v), "correct under any: %s", oc_verdict_name(v.kind));
  OUT.v[5] = NAN;
  seal(&OUT);
  v = judge(OC_CONV_OP_CONV, &cv, &X, &W, &B, &OUT, "fp32", OC_CONV_ANY);
  EXPECT(v.kind == OC_FAIL_SPECIAL, "NaN from finite inputs under any: %s",
         oc_verdict_name(v.kind));
  t_line("tf32 operands: tf32 profile passes, fp32 fails, algorithm any inconclusive", bad);
}

/* bf16/fp16 inputs with fp32 accumulation at K = 64 x 3 x 3 = 576: passes;
 * fp16 accumulation (all-positive data: no cancellation to hide it) fails,
 * explained as fp16 accumulation. */
static void reduced_cases(void) {
  int bad = t_fail;
  struct conv cv = {2, {1, 1}, {1, 1}, {1, 1}, 1};
  int64_t is[2] = {5, 5}, ks[2] = {3, 3};
  static const enum oc_format fs[] = {OC_FP16, OC_BF16};
  static const char *const prof[] = {"fp16_fp32acc", "bf16_fp32acc"};
  for (int f = 0; f < 2; f++) {
    shapes(&cv, fs[f], 1, 64, 2, is, ks, 0);
    for (size_t s = 0; s < sizeof good / sizeof good[0]; s++) {
      conv_fwd(&cv, &X, &W, &B, &OUT, good[s], OK);
      struct oc_verdict v = judge(OC_CONV_OP_CONV, &cv, &X, &W, &B, &OUT, prof[f], OC_CONV_DIRECT);
      EXPECT(passes(&v), "%s %s: %s", prof[f], t_sim_name[good[s]], oc_verdict_name(v.kind));
      v = judge(OC_CONV_OP_CONV, &cv, &X, &W, &B, &OUT, "tensorcore_fp32:ftz=1:in=bf16:out=bf16",
                OC_CONV_DIRECT);
      EXPECT(fs[f] != OC_BF16 || passes(&v), "tensorcore %s: %s", t_sim_name[good[s]],
             oc_verdict_name(v.kind));
    }
    conv_fwd(&cv, &X, &W, &B, &OUT, SIM_FP16_ACC, OK);
    struct oc_verdict v = judge(OC_CONV_OP_CONV, &cv, &X, &W, &B, &OUT, prof[f], OC_CONV_DIRECT);
    EXPECT(fails(&v) && (fs[f] != OC_FP16 || strstr(v.explained_by, "fp16")),
           "%s with fp16 accumulation: %s (%s)", prof[f], oc_verdict_name(v.kind), v.explained_by);
  }
  t_line("bf16/fp16 with fp32 accumulation pass, fp16 accumulation at K=576 fails", bad);
}

/* Input gradient (conv_transpose of g with w), transposed convolution,
 * weight and bias gradients. */
static void backward_cases(void) {
  static const struct {
    const char *what;
    struct conv cv;
    int64_t N, C, O, is[3], ks[3];
  } cs[] = {
      {"2-d stride 2 padding 1 groups 2", {2, {2, 2}, {1, 1}, {1, 1}, 2}, 2, 4, 6, {7, 8}, {3, 3}},
      {"1-d stride 3 dilation 2", {1, {3}, {2}, {2}, 1}, 2, 3, 2, {19}, {4}},
      {"3-d stride (2,1,1)",
       {3, {2, 1, 1}, {0, 1, 1}, {1, 1, 1}, 1},
       1,
       2,
       3,
       {5, 4, 3},
       {3, 2, 2}},
  };
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
    int bad = t_fail;
    const struct conv *cv = &cs[i].cv;
    shapes(cv, OC_FP32, cs[i].N, cs[i].C, cs[i].O, cs[i].is, cs[i].ks, -1);
    static struct tt GI, GW, GB;
    GI = X, GW = W;
    int64_t bs[1] = {cs[i].O};
    fill(&GB, OC_FP32, 1, bs, 0, 0);
    for (size_t s = 0; s < sizeof good / sizeof good[0]; s++) {
      conv_scatter(cv, &G, &W, NULL, &GI, good[s], OK);
      struct oc_verdict v =
          judge(OC_CONV_OP_CONV_TRANSPOSE, cv, &G, &W, NULL, &GI, "fp32", OC_CONV_DIRECT);
      EXPECT(passes(&v), "%s grad_input %s: %s", cs[i].what, t_sim_name[good[s]],
             oc_verdict_name(v.kind));
      if (!passes(&v)) t_print_verdict(&v);
      conv_wgrad(cv, &G, &X, &GW, good[s], OK);
      v = judge(OC_CONV_OP_CONV_WEIGHT_GRAD, cv, &G, &X, NULL, &GW, "fp32", OC_CONV_DIRECT);
      EXPECT(passes(&v), "%s grad_weight %s: %s", cs[i].what, t_sim_name[good[s]],
             oc_verdict_name(v.kind));
      if (!passes(&v)) t_print_verdict(&v);
      /* the bias gradient: g against ones */
      static struct tt ONE;
      ONE = G;
      for (int64_t e = 0; e < numel(&ONE); e++)
        ONE.v[e] = 1;
      memset(nterm, 0, sizeof nterm);
      int64_t sp = vol(cv->nsp, G.sh + 2);
      for (int64_t n = 0; n < G.sh[0]; n++)
        for (int64_t o = 0; o < G.sh[1]; o++)
          for (int64_t f = 0; f < sp; f++)
            add_term(o, G.v[(n * G.sh[1] + o) * sp + f], 1);
      finish(&GB, good[s], NULL, 0, OK);
      v = judge(OC_CONV_OP_CONV_BIAS_GRAD, cv, &G, NULL, NULL, &GB, "fp32", OC_CONV_DIRECT);
      EXPECT(passes(&v), "%s grad_bias %s: %s", cs[i].what, t_sim_name[good[s]],
             oc_verdict_name(v.kind));
    }
    conv_scatter(cv, &G, &W, NULL, &GI, SIM_FP32_SEQ, FLIP);
    struct oc_verdict v =
        judge(OC_CONV_OP_CONV_TRANSPOSE, cv, &G, &W, NULL, &GI, "fp32", OC_CONV_DIRECT);
    EXPECT(fails(&v), "%s grad_input unflipped: %s", cs[i].what, oc_verdict_name(v.kind));
    conv_wgrad(cv, &G, &X, &GW, SIM_FP32_SEQ, DROP_N);
    v = judge(OC_CONV_OP_CONV_WEIGHT_GRAD, cv, &G, &X, NULL, &GW, "fp32", OC_CONV_DIRECT);
    EXPECT(fails(&v), "%s grad_weight without the last batch: %s", cs[i].what,
           oc_verdict_name(v.kind));
    GB.v[1] += fabs(GB.v[1]) * 1e-3 + 1e-3;
    seal(&GB);
    v = judge(OC_CONV_OP_CONV_BIAS_GRAD, cv, &G, NULL, NULL, &GB, "fp32", OC_CONV_DIRECT);
    EXPECT(fails(&v), "%s grad_bias off: %s", cs[i].what, oc_verdict_name(v.kind));
    t_line(cs[i].what, bad);
  }
}

/* conv_transpose2d with a bias and output_padding 1: x [N, C, *], w [C,
 * O/G, *k]. */
static void transposed_cases(void) {
  int bad = t_fail;
  struct conv cv = {2, {2, 2}, {1, 1}, {1, 1}, 2};
  int64_t xs[4] = {2, 4, 4, 5}, ws[4] = {4, 3, 3, 3}, os[4] = {2, 6, 8, 10}, bs[1] = {6};
  fill(&X, OC_FP32, 4, xs, -1, 1);
  fill(&W, OC_FP32, 4, ws, -1, 1);
  fill(&B, OC_FP32, 1, bs, -1, 1);
  fill(&OUT, OC_FP32, 4, os, 0, 0);
  seal(&X), seal(&W), seal(&B);
  for (size_t s = 0; s < sizeof good / sizeof good[0]; s++) {
    conv_scatter(&cv, &X, &W, &B, &OUT, good[s], OK);
    struct oc_verdict v =
        judge(OC_CONV_OP_CONV_TRANSPOSE, &cv, &X, &W, &B, &OUT, "fp32", OC_CONV_DIRECT);
    EXPECT(passes(&v), "transposed %s: %s", t_sim_name[good[s]], oc_verdict_name(v.kind));
  }
  conv_scatter(&cv, &X, &W, &B, &OUT, SIM_FP32_SEQ, NO_BIAS);
  struct oc_verdict v =
      judge(OC_CONV_OP_CONV_TRANSPOSE, &cv, &X, &W, &B, &OUT, "fp32", OC_CONV_DIRECT);
  EXPECT(fails(&v), "transposed without bias: %s", oc_verdict_name(v.kind));
  /* shapes that fit no transposed convolution of these parameters */
  int64_t bad_os[4] = {2, 6, 10, 10};
  fill(&OUT, OC_FP32, 4, bad_os, 0, 0);
  seal(&OUT);
  v = judge(OC_CONV_OP_CONV_TRANSPOSE, &cv, &X, &W, &B, &OUT, "fp32", OC_CONV_DIRECT);
  EXPECT((int)v.kind == -1, "output too long rejected: %d", (int)v.kind);
  t_line("conv_transpose2d groups 2, output_padding 1, bias", bad);
}

/* An infinite weight: the padding taps multiplied as zeros give NaN at
 * the border, which is accepted; the exact Inf elsewhere must be Inf. */
static void special_cases(void) {
  int bad = t_fail;
  struct conv cv = {1, {1}, {1}, {1}, 1};
  int64_t is[1] = {6}, ks[1] = {3};
  shapes(&cv, OC_FP32, 1, 1, 1, is, ks, 0.5);
  W.v[0] = INFINITY;
  seal(&W);
  conv_fwd(&cv, &X, &W, NULL, &OUT, SIM_FP32_SEQ, OK); /* padding terms: 0 * Inf = NaN */
  struct oc_verdict v = judge(OC_CONV_OP_CONV, &cv, &X, &W, NULL, &OUT, "fp32", OC_CONV_DIRECT);
  EXPECT(passes(&v), "0 * Inf at the padding: %s", oc_verdict_name(v.kind));
  OUT.v[3] = 1;
  seal(&OUT);
  v = judge(OC_CONV_OP_CONV, &cv, &X, &W, NULL, &OUT, "fp32", OC_CONV_DIRECT);
  EXPECT(v.kind == OC_FAIL_SPECIAL, "a number where the exact value is Inf: %s",
         oc_verdict_name(v.kind));
  /* sums past fp32's range: the direct profile's output must overflow; a
   * transform's rounding (algorithm any) may land anywhere near the top */
  struct conv c0 = {1, {1}, {0}, {1}, 1};
  int64_t is0[1] = {3}, ks0[1] = {2};
  shapes(&c0, OC_FP32, 1, 1, 1, is0, ks0, 0.5);
  for (int i = 0; i < 3; i++)
    X.v[i] = 0x1.8p127;
  W.v[0] = W.v[1] = 1;
  seal(&X), seal(&W);
  OUT.v[0] = OUT.v[1] = 0x1.fffffep127; /* finite, where 3 * 2^127 overflows */
  seal(&OUT);
  v = judge(OC_CONV_OP_CONV, &c0, &X, &W, NULL, &OUT, "fp32", OC_CONV_DIRECT);
  EXPECT(v.kind == OC_FAIL_SPECIAL, "finite for an overflowing sum, direct: %s",
         oc_verdict_name(v.kind));
  v = judge(OC_CONV_OP_CONV, &c0, &X, &W, NULL, &OUT, "fp32", OC_CONV_ANY);
  EXPECT(v.kind == OC_INCONCLUSIVE, "finite for an overflowing sum, any: %s",
         oc_verdict_name(v.kind));
  t_line("Inf weight: NaN at the padding accepted, a number for Inf fails; overflow near the top",
         bad);
}

/* A convolution too large to check whole (67600 outputs): sampled, the
 * correct one passes with the coverage target met; one whose last output
 * position is wrong in every channel (a dropped tail) is caught by the
 * sample's last column. */
static void sampled_cases(void) {
  int bad = t_fail;
  enum { C = 2, O = 4, H = 130 };
  int64_t xs[4] = {1, C, H, H}, ws[4] = {O, C, 3, 3}, os[4] = {1, O, H, H};
  float *x = malloc(sizeof(float) * C * H * H), *w = malloc(sizeof(float) * O * C * 9),
        *y = malloc(sizeof(float) * O * H * H);
  for (int i = 0; i < C * H * H; i++)
    x[i] = (float)(urand() - 0.5);
  for (int i = 0; i < O * C * 9; i++)
    w[i] = (float)(urand() - 0.5);
  for (int o = 0; o < O; o++) /* padding 1, stride 1: sums in double, rounded once */
    for (int i = 0; i < H; i++)
      for (int j = 0; j < H; j++) {
        double acc = 0;
        for (int c = 0; c < C; c++)
          for (int ki = 0; ki < 3; ki++)
            for (int kj = 0; kj < 3; kj++) {
              int ii = i - 1 + ki, jj = j - 1 + kj;
              if (ii >= 0 && ii < H && jj >= 0 && jj < H)
                acc += (double)x[(c * H + ii) * H + jj] * w[((o * C + c) * 3 + ki) * 3 + kj];
            }
        y[(o * H + i) * H + j] = (float)acc;
      }
  struct oc_tensor tx, tw, ty;
  oc_tensor_make(&tx, x, OC_FP32, 4, xs, NULL);
  oc_tensor_make(&tw, w, OC_FP32, 4, ws, NULL);
  oc_tensor_make(&ty, y, OC_FP32, 4, os, NULL);
  struct oc_profile p;
  oc_profile_parse("fp32", &p);
  struct oc_conv_args a = {&tx, &tw, NULL, {1, 1}, {1, 1}, {1, 1}, 1, OC_CONV_DIRECT};
  struct oc_verdict v;
  int r = oc_check_conv(OC_CONV_OP_CONV, &a, &ty, &p, NULL, &v);
  EXPECT(r == 0 && passes(&v) && v.checked < v.total && v.miss_prob <= 1e-6,
         "sampled: %s, checked %lld of %lld, miss %g", oc_verdict_name(v.kind),
         (long long)v.checked, (long long)v.total, v.miss_prob);
  for (int o = 0; o < O; o++)
    y[(o * H + H - 1) * H + H - 1] += 0.25f;
  r = oc_check_conv(OC_CONV_OP_CONV, &a, &ty, &p, NULL, &v);
  EXPECT(r == 0 && fails(&v), "sampled, last position wrong: %s", oc_verdict_name(v.kind));
  free(x), free(w), free(y);
  t_line("67600 outputs sampled: correct passes, the last position wrong in every channel fails",
         bad);
}

int main(void) {
  forward_cases();
  tf32_cases();
  reduced_cases();
  backward_cases();
  transposed_cases();
  special_cases();
  sampled_cases();
  return t_done("test_b_conv");
}
