/* test/oracle/test_b_batch_norm.c — batch norm (oc_check_batch_norm):
 * simulated fp32 kernels in ATen's forms (two passes and (x - mean)
 * invstd w + b; Welford and CPU's x alpha + beta; cuDNN-like one pass
 * under norm=one_pass) pass for y, the saved statistics, the running
 * updates, eval and the backward; the near misses fail: normalising by
 * the unbiased variance, invstd without eps, a biased running variance,
 * a dropped momentum, momentum on the wrong side, one pass under the
 * two-pass profile with mean/std = 200, a dx without the mean(g) term, a
 * dweight without invstd, a dbias averaged, an eval-mode backward
 * without eps; a NaN makes its channel NaN. bf16 inputs summed through
 * bf16-rounded partials (ATen's CUDA backward) pass under partial=bf16
 * and not without it. */
#include "test_b_util.h"

enum { N = 4, C = 3, H = 4, W = 4, M = N * H * W, TOT = N * C * H * W };

static float x[TOT], g[TOT], y[TOT], wt[C], bs[C], mean[C], istd[C], rm[C], rv[C], out[C];
static const double EPS = 1e-5, MOM = 0.1;
static enum oc_format stat_fmt = OC_FP32; /* judge()'s attr stat_format */

static int64_t at(int n, int c, int s) { return ((int64_t)n * C + c) * H * W + s; }

static void make(uint64_t *st, double offset, double scale) {
  for (int i = 0; i < TOT; i++) {
    x[i] = (float)(offset + scale * (2 * oc_rand_unit(st) - 1));
    g[i] = (float)(2 * oc_rand_unit(st) - 1);
  }
  for (int c = 0; c < C; c++) {
    wt[c] = (float)(0.5 + oc_rand_unit(st));
    bs[c] = (float)(oc_rand_unit(st) - 0.5);
    rm[c] = (float)(oc_rand_unit(st) - 0.5);
    rv[c] = (float)(0.5 + oc_rand_unit(st));
  }
}

enum alg { TWO_PASS, WELFORD, ONE_PASS };

/* The channel's mean and biased variance as a float kernel computes them. */
static void stats(enum alg a, int c, float *mu, float *var) {
  if (a == WELFORD) {
    float m = 0, m2 = 0;
    int k = 0;
    for (int s = 0; s < H * W; s++)
      for (int n = 0; n < N; n++) {
        float v = x[at(n, c, s)], d = v - m;
        m += d / (float)++k;
        m2 += d * (v - m);
      }
    *mu = m, *var = m2 / (float)M;
    return;
  }
  float s1 = 0, s2 = 0;
  for (int n = 0; n < N; n++)
    for (int s = 0; s < H * W; s++)
      s1 += x[at(n, c, s)], s2 += x[at(n, c, s)] * x[at(n, c, s)];
  *mu = s1 / (float)M;
  if (a == ONE_PASS) {
    *var = s2 / (float)M - *mu * *mu;
    return;
  }
  float q = 0;
  for (int n = 0; n < N; n++)
    for (int s = 0; s < H * W; s++)
      q += (x[at(n, c, s)] - *mu) * (x[at(n, c, s)] - *mu);
  *var = q / (float)M;
}

/* y, save_mean, save_invstd, running stats; bug: 1 unbiased var in y, 2
 * invstd without eps, 3 biased running var, 4 momentum dropped, 5
 * momentum on the wrong side. */
static void forward(enum alg a, int bug) {
  for (int c = 0; c < C; c++) {
    float mu, var;
    stats(a, c, &mu, &var);
    float vn = bug == 1 ? var * (float)M / (float)(M - 1) : var;
    float r = 1.0f / sqrtf(vn + (bug == 2 ? 0.0f : (float)EPS));
    mean[c] = mu, istd[c] = r;
    for (int n = 0; n < N; n++)
      for (int s = 0; s < H * W; s++) {
        float v = x[at(n, c, s)];
        if (a == WELFORD) { /* ATen's CPU form */
          float al = r * wt[c], be = bs[c] - mu * al;
          y[at(n, c, s)] = v * al + be;
        } else {
          y[at(n, c, s)] = (v - mu) * r * wt[c] + bs[c];
        }
      }
    float m = (float)MOM, vu = bug == 3 ? var : var * (float)M / (float)(M - 1);
    rm[c] = bug == 4 ? mu : bug == 5 ? (1 - m) * mu + m * rm[c] : m * mu + (1 - m) * rm[c];
    rv[c] = bug == 4 ? vu : m * vu + (1 - m) * rv[c];
  }
}

static struct oc_verdict judge(enum oc_opid op, const char *prof, const void *outp,
                               const float *old) {
  struct oc_tensor X, G, Wt, B, Mn, Is, Rm, Rv, O;
  int64_t sx[4] = {N, C, H, W}, sc[1] = {C};
  oc_tensor_make(&X, x, OC_FP32, 4, sx, NULL);
  oc_tensor_make(&G, g, OC_FP32, 4, sx, NULL);
  oc_tensor_make(&Wt, wt, OC_FP32, 1, sc, NULL);
  oc_tensor_make(&B, bs, OC_FP32, 1, sc, NULL);
  oc_tensor_make(&Mn, mean, OC_FP32, 1, sc, NULL);
  oc_tensor_make(&Is, istd, OC_FP32, 1, sc, NULL);
  oc_tensor_make(&Rm, old ? old : rm, OC_FP32, 1, sc, NULL);
  oc_tensor_make(&Rv, old ? old : rv, OC_FP32, 1, sc, NULL);
  int elem =
      op == OC_ID_BATCH_NORM || op == OC_ID_BATCH_NORM_EVAL || op == OC_ID_BATCH_NORM_BACKWARD;
  oc_tensor_make(&O, outp, OC_FP32, elem ? 4 : 1, elem ? sx : sc, NULL);
  struct oc_profile p;
  oc_profile_parse(prof, &p);
  struct oc_batch_norm_args a = {&X, &G, &Wt, &B, &Mn, &Is, &Rm, &Rv, EPS, MOM, stat_fmt};
  struct oc_verdict v;
  EXPECT(oc_check_batch_norm(op, &a, &O, &p, NULL, &v) == 0, "rc");
  return v;
}

#define PASSES(v) (!oc_verdict_is_fail((v).kind) && (v).kind != OC_INCONCLUSIVE)

static void training(void) {
  int before = t_fail;
  static const char *const algs[] = {"two-pass", "welford", "one-pass"};
  for (int a = TWO_PASS; a <= ONE_PASS; a++)
    for (int seed = 1; seed <= 3; seed++) {
      uint64_t st = (uint64_t)seed;
      make(&st, 0.3, 1.0);
      float rm0[C], rv0[C];
      memcpy(rm0, rm, sizeof rm);
      memcpy(rv0, rv, sizeof rv);
      forward((enum alg)a, 0);
      const char *prof = a == ONE_PASS ? "fp32:norm=one_pass" : "fp32";
      struct oc_verdict v = judge(OC_ID_BATCH_NORM, prof, y, NULL);
      EXPECT(PASSES(v), "%s y: %s", algs[a], oc_verdict_name(v.kind));
      v = judge(OC_ID_BATCH_NORM_MEAN, prof, mean, NULL);
      EXPECT(PASSES(v), "%s mean: %s", algs[a], oc_verdict_name(v.kind));
      v = judge(OC_ID_BATCH_NORM_INVSTD, prof, istd, NULL);
      EXPECT(PASSES(v), "%s invstd: %s", algs[a], oc_verdict_name(v.kind));
      memcpy(out, rm, sizeof out);
      v = judge(OC_ID_BATCH_NORM_RUNNING_MEAN, prof, out, rm0);
      EXPECT(PASSES(v), "%s running_mean: %s", algs[a], oc_verdict_name(v.kind));
      memcpy(out, rv, sizeof out);
      v = judge(OC_ID_BATCH_NORM_RUNNING_VAR, prof, out, rv0);
      EXPECT(PASSES(v), "%s running_var: %s", algs[a], oc_verdict_name(v.kind));
      if (v.kind != OC_PASS && v.kind != OC_BITWISE) t_print_verdict(&v);
    }
  /* bf16 activations (autocast): x exact in bf16, y rounded to bf16 */
  uint64_t st = 4;
  make(&st, 0.3, 1.0);
  for (int i = 0; i < TOT; i++)
    x[i] = (float)t_rnd(OC_BF16, x[i]);
  forward(WELFORD, 0);
  for (int i = 0; i < TOT; i++)
    y[i] = (float)t_rnd(OC_BF16, y[i]);
  struct oc_verdict v = judge(OC_ID_BATCH_NORM, "fp32:in=bf16:acc=fp32:out=bf16", y, NULL);
  EXPECT(PASSES(v), "bf16 y: %s", oc_verdict_name(v.kind));
  /* ATen's CPU kernel with a bf16 weight: mean and invstd held in bf16
   * before the transform. Within the bound that says so (stat_format),
   * beyond the one of float statistics. */
  for (int c = 0; c < C; c++)
    wt[c] = (float)t_rnd(OC_BF16, wt[c]), bs[c] = (float)t_rnd(OC_BF16, bs[c]);
  for (int c = 0; c < C; c++) {
    float mu, var;
    stats(TWO_PASS, c, &mu, &var);
    float mb = (float)t_rnd(OC_BF16, mu), rb = (float)t_rnd(OC_BF16, 1.0f / sqrtf(var + 1e-5f));
    for (int n = 0; n < N; n++)
      for (int k = 0; k < H * W; k++)
        y[at(n, c, k)] = (float)t_rnd(OC_BF16, (x[at(n, c, k)] - mb) * rb * wt[c] + bs[c]);
  }
  stat_fmt = OC_BF16;
  v = judge(OC_ID_BATCH_NORM, "fp32:in=bf16:acc=fp32:out=bf16", y, NULL);
  EXPECT(PASSES(v), "bf16 statistics, stat_format bf16: %s", oc_verdict_name(v.kind));
  stat_fmt = OC_FP32;
  v = judge(OC_ID_BATCH_NORM, "fp32:in=bf16:acc=fp32:out=bf16", y, NULL);
  EXPECT(oc_verdict_is_fail(v.kind), "bf16 statistics under float's bound: %s",
         oc_verdict_name(v.kind));
  t_line("training forward: two-pass, Welford (CPU's alpha/beta form), one-pass, bf16 pass",
         before);
}

static void near_misses(void) {
  int before = t_fail;
  uint64_t st = 7;
  make(&st, 0.3, 1.0);
  float rm0[C], rv0[C];
  memcpy(rm0, rm, sizeof rm);
  memcpy(rv0, rv, sizeof rv);
  forward(TWO_PASS, 1);
  struct oc_verdict v = judge(OC_ID_BATCH_NORM, "fp32", y, NULL);
  EXPECT(oc_verdict_is_fail(v.kind), "unbiased var in y: %s", oc_verdict_name(v.kind));
  st = 8; /* a variance (3e-5) where eps weighs */
  make(&st, 0.3, 0.01);
  forward(TWO_PASS, 2);
  v = judge(OC_ID_BATCH_NORM_INVSTD, "fp32", istd, NULL);
  EXPECT(oc_verdict_is_fail(v.kind), "invstd without eps: %s", oc_verdict_name(v.kind));
  st = 7;
  make(&st, 0.3, 1.0);
  for (int bug = 3; bug <= 5; bug++) {
    memcpy(rm, rm0, sizeof rm), memcpy(rv, rv0, sizeof rv);
    forward(TWO_PASS, bug);
    memcpy(out, rv, sizeof out);
    struct oc_verdict vv = judge(OC_ID_BATCH_NORM_RUNNING_VAR, "fp32", out, rv0);
    memcpy(out, rm, sizeof out);
    struct oc_verdict vm = judge(OC_ID_BATCH_NORM_RUNNING_MEAN, "fp32", out, rm0);
    if (bug == 3)
      EXPECT(oc_verdict_is_fail(vv.kind) && PASSES(vm), "biased running var: %s",
             oc_verdict_name(vv.kind));
    else
      EXPECT(oc_verdict_is_fail(vm.kind), "momentum bug %d: %s", bug, oc_verdict_name(vm.kind));
  }
  /* one pass where mean/std is 200 (n u k << 1 << n u k^2: cancellation
   * beyond the two-pass bound, within the one-pass one) */
  int fails = 0;
  for (int seed = 11; seed < 17; seed++) {
    st = (uint64_t)seed;
    make(&st, 115.0, 1.0);
    forward(ONE_PASS, 0);
    v = judge(OC_ID_BATCH_NORM_INVSTD, "fp32", istd, NULL);
    fails += oc_verdict_is_fail(v.kind);
    struct oc_verdict v1 = judge(OC_ID_BATCH_NORM_INVSTD, "fp32:norm=one_pass", istd, NULL);
    EXPECT(PASSES(v1), "one pass under norm=one_pass: %s", oc_verdict_name(v1.kind));
  }
  EXPECT(fails >= 4, "one pass under the two-pass profile failed %d of 6", fails);
  t_line("unbiased var in y, no eps, biased running var, momentum bugs, one pass: fail", before);
}

static void eval(void) {
  int before = t_fail;
  uint64_t st = 21;
  make(&st, 0.3, 2.0);
  for (int bug = 0; bug < 2; bug++) {
    for (int c = 0; c < C; c++) {
      float r = 1.0f / sqrtf(rv[c] + (bug ? 0.0f : (float)EPS));
      for (int n = 0; n < N; n++)
        for (int s = 0; s < H * W; s++)
          y[at(n, c, s)] = (x[at(n, c, s)] - rm[c]) * r * wt[c] + bs[c];
    }
    struct oc_verdict v = judge(OC_ID_BATCH_NORM_EVAL, "fp32", y, NULL);
    if (bug)
      EXPECT(oc_verdict_is_fail(v.kind), "eval without eps: %s", oc_verdict_name(v.kind));
    else
      EXPECT(PASSES(v), "eval: %s", oc_verdict_name(v.kind));
  }
  t_line("eval from running statistics passes; without eps fails", before);
}

/* dx (bug 1: no mean(g) term), dweight (bug 2: no invstd), dbias (bug 3: averaged). */
static void backward(int bug) {
  float dx[TOT], dw[C], db[C];
  for (int c = 0; c < C; c++) {
    float sg = 0, dot = 0, mu = mean[c], r = istd[c];
    for (int n = 0; n < N; n++)
      for (int s = 0; s < H * W; s++)
        sg += g[at(n, c, s)], dot += (x[at(n, c, s)] - mu) * g[at(n, c, s)];
    float gm = bug == 1 ? 0 : sg / (float)M, proj = dot * r * r / (float)M, sc = r * wt[c];
    for (int n = 0; n < N; n++)
      for (int s = 0; s < H * W; s++)
        dx[at(n, c, s)] = (g[at(n, c, s)] - gm - (x[at(n, c, s)] - mu) * proj) * sc;
    dw[c] = bug == 2 ? dot : dot * r;
    db[c] = bug == 3 ? sg / (float)M : sg;
  }
  struct oc_verdict v = judge(OC_ID_BATCH_NORM_BACKWARD, "fp32", dx, NULL);
  EXPECT(bug == 1 ? oc_verdict_is_fail(v.kind) : PASSES(v), "dx (bug %d): %s", bug,
         oc_verdict_name(v.kind));
  v = judge(OC_ID_BATCH_NORM_BACKWARD_WEIGHT, "fp32", dw, NULL);
  EXPECT(bug == 2 ? oc_verdict_is_fail(v.kind) : PASSES(v), "dweight (bug %d): %s", bug,
         oc_verdict_name(v.kind));
  v = judge(OC_ID_BATCH_NORM_BACKWARD_BIAS, "fp32", db, NULL);
  EXPECT(bug == 3 ? oc_verdict_is_fail(v.kind) : PASSES(v), "dbias (bug %d): %s", bug,
         oc_verdict_name(v.kind));
}

static void backwards(void) {
  int before = t_fail;
  for (int bug = 0; bug < 4; bug++) {
    uint64_t st = 31 + (uint64_t)bug;
    make(&st, -0.2, 1.5);
    forward(WELFORD, 0);
    backward(bug);
  }
  t_line("backward: dx, dweight, dbias pass; dropped mean(g), invstd, an average fail", before);
}

/* ATen's CUDA reduction for 16-bit inputs: 16 threads sum a strided
 * quarter each in float, then a shuffle tree whose every received partial
 * is rebuilt through bf16 (Float2's constructor); terms t[] already in
 * the form the kernel builds them. */
static float shuffled_sum(const float *t) {
  float part[16] = {0};
  for (int i = 0; i < M; i++)
    part[i % 16] += t[i];
  for (int w = 8; w > 0; w /= 2)
    for (int i = 0; i < w; i++)
      part[i] += (float)t_rnd(OC_BF16, part[i + w]);
  return part[0];
}

/* bf16 inputs, dweight and dbias summed as shuffled_sum does (products
 * g (x - mean) rounded to bf16 too): pass under partial=bf16 and fail
 * without it; an averaged dbias still fails under partial=bf16. */
static void bf16_partials(void) {
  int before = t_fail, plain_fails = 0;
  for (int rep = 0; rep < 4; rep++) {
    uint64_t st = 77 + (uint64_t)rep;
    make(&st, 0.3, 1.0);
    for (int i = 0; i < TOT; i++)
      x[i] = (float)t_rnd(OC_BF16, x[i]), g[i] = (float)t_rnd(OC_BF16, g[i]);
    forward(WELFORD, 0);
    float dw[C], db[C], db_avg[C], gt[M], dt[M];
    for (int c = 0; c < C; c++) {
      for (int n = 0, i = 0; n < N; n++)
        for (int s = 0; s < H * W; s++, i++) {
          gt[i] = g[at(n, c, s)];
          dt[i] = (float)t_rnd(OC_BF16, g[at(n, c, s)] * (x[at(n, c, s)] - mean[c]));
        }
      dw[c] = shuffled_sum(dt) * istd[c];
      db[c] = shuffled_sum(gt);
      db_avg[c] = db[c] / (float)M;
    }
    struct oc_verdict v = judge(OC_ID_BATCH_NORM_BACKWARD_WEIGHT, "fp32:partial=bf16", dw, NULL);
    EXPECT(PASSES(v), "dweight under partial=bf16: %s", oc_verdict_name(v.kind));
    v = judge(OC_ID_BATCH_NORM_BACKWARD_BIAS, "fp32:partial=bf16", db, NULL);
    EXPECT(PASSES(v), "dbias under partial=bf16: %s", oc_verdict_name(v.kind));
    v = judge(OC_ID_BATCH_NORM_BACKWARD_BIAS, "fp32:partial=bf16", db_avg, NULL);
    EXPECT(oc_verdict_is_fail(v.kind), "averaged dbias under partial=bf16: %s",
           oc_verdict_name(v.kind));
    plain_fails +=
        oc_verdict_is_fail(judge(OC_ID_BATCH_NORM_BACKWARD_WEIGHT, "fp32", dw, NULL).kind);
    plain_fails += oc_verdict_is_fail(judge(OC_ID_BATCH_NORM_BACKWARD_BIAS, "fp32", db, NULL).kind);
  }
  EXPECT(plain_fails >= 4, "bf16 partials judged under plain fp32 failed %d of 8", plain_fails);
  t_line("bf16-rounded partials pass under partial=bf16 only; an average still fails", before);
}

/* Eval mode's backward: dx = g w / sqrt(running_var + eps) (bug: no eps),
 * dweight = sum g (x - running_mean) invstd. */
static void eval_backward(void) {
  int before = t_fail;
  uint64_t st = 51;
  make(&st, 0.3, 1.0);
  for (int c = 0; c < C; c++)
    rv[c] = (float)(1e-4 * (1 + c)); /* eps weighs */
  for (int bug = 0; bug < 2; bug++) {
    float dx[TOT], dw[C];
    for (int c = 0; c < C; c++) {
      float r = 1.0f / sqrtf(rv[c] + (bug ? 0.0f : (float)EPS)), dot = 0;
      for (int i = 0; i < N * H * W; i++) {
        int64_t k = at(i / (H * W), c, i % (H * W));
        dx[k] = g[k] * wt[c] * r;
        dot += g[k] * (x[k] - rm[c]);
      }
      dw[c] = dot * r;
    }
    struct oc_tensor X, G, Wt, Rm, Rv, O, Ow;
    int64_t sx[4] = {N, C, H, W}, sc[1] = {C};
    oc_tensor_make(&X, x, OC_FP32, 4, sx, NULL);
    oc_tensor_make(&G, g, OC_FP32, 4, sx, NULL);
    oc_tensor_make(&Wt, wt, OC_FP32, 1, sc, NULL);
    oc_tensor_make(&Rm, rm, OC_FP32, 1, sc, NULL);
    oc_tensor_make(&Rv, rv, OC_FP32, 1, sc, NULL);
    oc_tensor_make(&O, dx, OC_FP32, 4, sx, NULL);
    oc_tensor_make(&Ow, dw, OC_FP32, 1, sc, NULL);
    struct oc_profile p;
    oc_profile_parse("fp32", &p);
    struct oc_batch_norm_args a = {&X, &G, &Wt, NULL, &Rm, NULL, NULL, &Rv, EPS, MOM, OC_FP32};
    struct oc_verdict v, vw;
    EXPECT(oc_check_batch_norm(OC_ID_BATCH_NORM_EVAL_BACKWARD, &a, &O, &p, NULL, &v) == 0, "rc");
    EXPECT(oc_check_batch_norm(OC_ID_BATCH_NORM_BACKWARD_WEIGHT, &a, &Ow, &p, NULL, &vw) == 0,
           "rc");
    EXPECT(bug ? oc_verdict_is_fail(v.kind) : PASSES(v), "eval dx (bug %d): %s", bug,
           oc_verdict_name(v.kind));
    EXPECT(bug ? oc_verdict_is_fail(vw.kind) : PASSES(vw), "eval dweight (bug %d): %s", bug,
           oc_verdict_name(vw.kind));
  }
  t_line("eval backward: dx and dweight from running_var pass; without eps fail", before);
}

static void specials(void) {
  int before = t_fail;
  uint64_t st = 41;
  make(&st, 0.3, 1.0);
  x[at(2, 1, 5)] = NAN;
  forward(TWO_PASS, 0);
  struct oc_verdict v = judge(OC_ID_BATCH_NORM, "fp32", y, NULL);
  EXPECT(PASSES(v), "NaN channel all NaN: %s", oc_verdict_name(v.kind));
  y[at(0, 1, 0)] = 0.5f; /* a finite value in the NaN channel */
  v = judge(OC_ID_BATCH_NORM, "fp32", y, NULL);
  EXPECT(v.kind == OC_FAIL_SPECIAL, "finite in a NaN channel: %s", oc_verdict_name(v.kind));
  v = judge(OC_ID_BATCH_NORM_MEAN, "fp32", mean, NULL);
  EXPECT(PASSES(v), "NaN mean: %s", oc_verdict_name(v.kind));
  t_line("a NaN makes its channel NaN; a finite value there fails", before);
}

int main(void) {
  training();
  near_misses();
  eval();
  backwards();
  bf16_partials();
  eval_backward();
  specials();
  return t_done("test_b_batch_norm");
}
