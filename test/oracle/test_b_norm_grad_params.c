/* test/oracle/test_b_norm_grad_params.c — the norms' parameter gradients
 * (oc_check_grad's layer_norm_dweight, layer_norm_dbias and
 * rms_norm_dweight): column sums over the rows in fp32, in the
 * orders ATen's kernels take (rows in order, blocks of rows then the
 * blocks, from the end; x-hat as (x - mean) rstd or x rstd - mean rstd,
 * fused or not) pass; dweight without the mean term, a sum accumulated in
 * fp16 (a near miss at a few rows) and dbias summed in bf16 fail; a NaN or
 * Inf in a column is IEEE's value. */
#include "test_b_util.h"

enum { M = 96, N = 40 };

enum { F_SEQ, F_BLOCKED, F_REVERSE, F_FMA, F_NO_MEAN, F_FP16, F_NFORMS };
static const char *const fname[F_NFORMS] = {"rows in order",         "blocks of 32 rows",
                                            "from the end",          "x rstd - mean rstd, fma",
                                            "without the mean term", "fp16 accumulation"};

static float g[M][N], x[M][N], mu[M], rs[M];

/* One term g x-hat in form f (float). */
static float term(int f, int ln, int i, int j) {
  float m = ln ? mu[i] : 0;
  switch (f) {
  case F_FMA: return g[i][j] * fmaf(x[i][j], rs[i], -(m * rs[i]));
  case F_NO_MEAN: return g[i][j] * (x[i][j] * rs[i]);
  default: return g[i][j] * ((x[i][j] - m) * rs[i]);
  }
}

/* Column j of dweight (what 0) or dbias (1) in form f. */
static float column(int f, int ln, int what, int j) {
  float acc = 0, blk = 0;
  for (int k = 0; k < M; k++) {
    int i = f == F_REVERSE ? M - 1 - k : k;
    float t = what ? g[i][j] : term(f, ln, i, j);
    if (f == F_FP16) {
      acc = (float)t_rnd(OC_FP16, acc + t);
    } else if (f == F_BLOCKED) {
      blk += t;
      if (i % 32 == 31 || i == M - 1) acc += blk, blk = 0;
    } else {
      acc += t;
    }
  }
  return acc;
}

static int judge(enum oc_grad_op op, const float *out, int with_stats) {
  static struct oc_tensor tg, tx, tm, tr, to;
  t_tensor2(&tg, g, OC_FP32, M, N);
  t_tensor2(&tx, x, OC_FP32, M, N);
  t_tensor2(&tm, mu, OC_FP32, M, 1);
  t_tensor2(&tr, rs, OC_FP32, M, 1);
  int64_t n = N;
  oc_tensor_make(&to, out, OC_FP32, 1, &n, NULL);
  struct oc_profile p;
  EXPECT(oc_profile_parse("fp32", &p) == 0, "profile");
  struct oc_grad_args a = {&tg, with_stats ? &tx : NULL, 0, 0, &tm, &tr, NULL};
  struct oc_verdict v;
  EXPECT(oc_check_grad(op, &a, &to, &p, NULL, &v) == 0, "rc");
  if (oc_verdict_is_fail(v.kind) || v.kind == OC_INCONCLUSIVE || getenv("T_VERBOSE"))
    t_print_verdict(&v);
  return v.kind;
}

static void fill(double off, unsigned s) {
  for (int i = 0; i < M; i++) {
    double sum = 0, sq = 0;
    for (int j = 0; j < N; j++) {
      s = s * 1103515245u + 12345u;
      x[i][j] = (float)(off + ((s >> 8) & 0xffff) / 32768.0 - 1);
      s = s * 1103515245u + 12345u;
      g[i][j] = (float)(((s >> 8) & 0xffff) / 65536.0 * 1e-2 - 0.4e-2);
      sum += x[i][j];
    }
    mu[i] = (float)(sum / N);
    for (int j = 0; j < N; j++)
      sq += (x[i][j] - mu[i]) * (x[i][j] - mu[i]);
    rs[i] = (float)(1 / sqrt(sq / N + 1e-5));
  }
}

static void weight_case(int ln) {
  static float out[N];
  enum oc_grad_op op = ln ? OC_GRAD_LAYER_NORM_DWEIGHT : OC_GRAD_RMS_NORM_DWEIGHT;
  for (int f = 0; f < F_NFORMS; f++) {
    if (!ln && f == F_NO_MEAN) continue;
    for (int j = 0; j < N; j++)
      out[j] = column(f, ln, 0, j);
    int bad = t_fail, k = judge(op, out, 1);
    if (f < F_NO_MEAN)
      EXPECT(k <= OC_PASS, "%s: correct %s fails", ln ? "layer_norm" : "rms_norm", fname[f]);
    else
      EXPECT(oc_verdict_is_fail(k), "%s: %s passes", ln ? "layer_norm" : "rms_norm", fname[f]);
    char line[128];
    snprintf(line, sizeof line, "%s dweight %s", ln ? "layer_norm" : "rms_norm", fname[f]);
    t_line(line, bad);
  }
}

static void bias_case(void) {
  static float out[N];
  int forms[] = {F_SEQ, F_BLOCKED, F_REVERSE, F_FP16};
  for (size_t q = 0; q < sizeof forms / sizeof forms[0]; q++) {
    int f = forms[q];
    for (int j = 0; j < N; j++)
      out[j] = column(f, 1, 1, j);
    int bad = t_fail, k = judge(OC_GRAD_LAYER_NORM_DBIAS, out, 0);
    if (f != F_FP16)
      EXPECT(k <= OC_PASS, "dbias: correct %s fails", fname[f]);
    else
      EXPECT(oc_verdict_is_fail(k), "dbias: %s passes", fname[f]);
    char line[128];
    snprintf(line, sizeof line, "layer_norm dbias %s", fname[f]);
    t_line(line, bad);
  }
  /* bf16 sums */
  for (int j = 0; j < N; j++) {
    float acc = 0;
    for (int i = 0; i < M; i++)
      acc = (float)t_rnd(OC_BF16, acc + g[i][j]);
    out[j] = acc;
  }
  int bad = t_fail;
  EXPECT(oc_verdict_is_fail(judge(OC_GRAD_LAYER_NORM_DBIAS, out, 0)), "dbias in bf16 passes");
  t_line("layer_norm dbias bf16 accumulation", bad);
}

static void special_case(void) {
  static float out[N];
  g[5][3] = NAN;
  g[7][4] = INFINITY;
  for (int j = 0; j < N; j++)
    out[j] = column(F_SEQ, 1, 0, j);
  int bad = t_fail;
  EXPECT(judge(OC_GRAD_LAYER_NORM_DWEIGHT, out, 1) <= OC_PASS, "NaN/Inf columns");
  out[3] = 0; /* a NaN column that lost its NaN */
  EXPECT(oc_verdict_is_fail(judge(OC_GRAD_LAYER_NORM_DWEIGHT, out, 1)), "lost NaN passes");
  t_line("dweight: NaN and Inf columns", bad);
}

int main(void) {
  fill(3, 1);
  weight_case(1);
  weight_case(0);
  bias_case();
  special_case();
  return t_done("test_b_norm_grad_params");
}
