/* test/oracle/test_b_optim.c — optimizer updates (oc_check_optim): adam,
 * adamw and sgd simulated as torch's fused kernels compute them (CUDA:
 * double constants and steps rounded to float, or float constants with
 * 1 - beta taken from the float beta; CPU: float constants,
 * vectorized float steps; a lerp / fused multiply-add order) pass for
 * fp32, bf16 and fp64 tensors, with amsgrad, maximize, weight decay, a
 * grad scale, nesterov and the first step; found_inf keeps the old values.
 * Wrong updates fail on the output they touch: exp_avg_sq accumulated in
 * fp16, beta2 held in bf16, a missing bias correction, a
 * momentum buffer in fp16, an update that ignores found_inf; exp_avg_sq
 * kept to tf32's 11 bits (some 2000 times its bound); a near miss:
 * exp_avg_sq 4 ulps above the CUDA form's. */
#include "test_b_util.h"

enum { R = 16, C = 24, N = R * C };

struct hp {
  double lr, b1, b2, eps, wd;
  int amsgrad, maximize, adamw;
  double step, scale;
};

enum {
  K_CUDA,
  K_CPU,
  K_LERP,
  K_CUDA_F,
  K_FP16_V,
  K_NO_BC,
  K_BF16_BETA2,
  K_TF32_V,
  K_4ULP_V,
  K_NFORMS
};
static const char *const kname[K_NFORMS] = {"cuda",
                                            "cpu",
                                            "lerp_fma",
                                            "cuda float constants",
                                            "fp16 exp_avg_sq",
                                            "no bias correction",
                                            "beta2 in bf16",
                                            "tf32 exp_avg_sq",
                                            "exp_avg_sq 4 ulps off"};
#define BAD(k) ((k) >= K_FP16_V)

/* One element of adam(w) in kernel form k; o[4]: param, exp_avg,
 * exp_avg_sq, max_exp_avg_sq (unrounded fp32 results). */
static void adam_k(int k, const struct hp *h, float p, float g, float m, float v, float vmax,
                   float *o) {
  g = h->scale != 1 ? (float)((double)g / h->scale) : g;
  if (h->maximize) g = -g;
  if (!h->adamw && h->wd != 0) g = (float)(g + h->wd * p);
  if (h->adamw && h->wd != 0)
    p = k == K_CUDA ? (float)(p - h->lr * h->wd * p) : p * (float)(1 - h->lr * h->wd);
  double bc1 = 1 - pow(h->b1, h->step), bc2 = 1 - pow(h->b2, h->step);
  float b1 = (float)h->b1, w1 = (float)(1 - h->b1), b2 = (float)h->b2, w2 = (float)(1 - h->b2);
  if (k == K_BF16_BETA2) b2 = (float)t_rnd(OC_BF16, h->b2);
  if (k == K_CUDA_F) /* 1 - beta from the float beta (measured: torch 2.11's fused CUDA Adam) */
    w1 = 1.0f - b1, w2 = 1.0f - b2;
  float m1, v1;
  if (k == K_CUDA) {
    m1 = (float)(h->b1 * m + (1 - h->b1) * g);
    v1 = (float)(h->b2 * v + (1 - h->b2) * g * g);
  } else if (k == K_LERP) {
    m1 = fmaf(w1, g - m, m);
    v1 = fmaf(g, g * w2, v * b2);
  } else {
    m1 = m * b1 + g * w1;
    v1 = v * b2 + g * g * w2;
  }
  if (k == K_FP16_V) { /* every step of exp_avg_sq in fp16 */
    double a = t_rnd(OC_FP16, t_rnd(OC_FP16, v) * t_rnd(OC_FP16, h->b2));
    double b = t_rnd(OC_FP16, t_rnd(OC_FP16, (double)g * g) * t_rnd(OC_FP16, 1 - h->b2));
    v1 = (float)t_rnd(OC_FP16, a + b);
  }
  if (k == K_TF32_V) /* the sum kept to tf32's 11 bits: a few hundred ulps of fp32 */
    v1 = (float)t_rnd(OC_TF32, (double)v * b2 + (double)g * g * w2);
  if (k == K_4ULP_V) {
    v1 = (float)(h->b2 * v + (1 - h->b2) * g * g);
    for (int q = 0; q < 4; q++)
      v1 = nextafterf(v1, INFINITY);
  }
  float vm = h->amsgrad ? fmaxf(vmax, v1) : v1;
  float vv = h->amsgrad ? vm : v1;
  float ss = k == K_NO_BC ? (float)h->lr : (float)(h->lr / (float)bc1);
  float bs = k == K_NO_BC ? 1.0f : (float)sqrt(bc2);
  float den = k == K_LERP ? sqrtf(vv / (float)bc2) + (float)h->eps
                          : (float)((double)(sqrtf(vv) / bs) + h->eps);
  o[0] = k == K_LERP ? fmaf(-ss, m1 / den, p) : p - ss * m1 / den;
  o[1] = m1, o[2] = v1, o[3] = vm;
}

/* The same update in double (fp64 tensors: ATen's opmath is double). */
static void adam_d(const struct hp *h, double p, double g, double m, double v, double vmax,
                   double *o) {
  g /= h->scale;
  if (h->maximize) g = -g;
  if (!h->adamw) g += h->wd * p;
  if (h->adamw) p -= h->lr * h->wd * p;
  double m1 = h->b1 * m + (1 - h->b1) * g, v1 = h->b2 * v + (1 - h->b2) * g * g;
  double vm = h->amsgrad ? fmax(vmax, v1) : v1;
  double den = sqrt(vm) / sqrt(1 - pow(h->b2, h->step)) + h->eps;
  o[0] = p - h->lr / (1 - pow(h->b1, h->step)) * m1 / den;
  o[1] = m1, o[2] = v1, o[3] = vm;
}

static void fill(float *a, int n, double lo, double hi, unsigned *s) {
  for (int i = 0; i < n; i++) {
    *s = *s * 1103515245u + 12345u;
    a[i] = (float)(lo + (hi - lo) * ((*s >> 8) & 0xffff) / 65535.0);
  }
}

static struct oc_tensor T(const void *d, enum oc_format f) {
  struct oc_tensor t;
  t_tensor2(&t, d, f, R, C);
  return t;
}

static int
judge(enum oc_optim_op op, struct oc_optim_args *a, enum oc_optim_out out,
      const struct oc_tensor *o, const char *prof) {
  struct oc_profile p;
  EXPECT(oc_profile_parse(prof, &p) == 0, "%s", prof);
  struct oc_verdict v;
  a->output = out;
  EXPECT(oc_check_optim(op, a, o, &p, NULL, &v) == 0, "rc");
  if (oc_verdict_is_fail(v.kind) || v.kind == OC_INCONCLUSIVE || getenv("T_VERBOSE"))
    t_print_verdict(&v);
  return v.kind;
}

/* Runs every kernel form on one set of hyperparameters in format f. */
static void adam_case(const char *what, const struct hp *h, enum oc_format f) {
  static float p[N], g[N], m[N], v[N], vm[N];
  static unsigned char bin[5][N * 8], bout[4][N * 8];
  unsigned s = 7;
  fill(p, N, -1, 1, &s);
  fill(g, N, -2e-2, 2e-2, &s);
  fill(m, N, -1e-3, 1e-3, &s);
  fill(v, N, 0, 1e-5, &s);
  fill(vm, N, 0, 2e-5, &s);
  const float *src[5] = {p, g, m, v, vm};
  for (int t = 0; t < 5; t++)
    for (int i = 0; i < N; i++)
      t_put(bin[t], f, i, t_rnd(f, src[t][i]));
  char prof[80];
  snprintf(prof, sizeof prof, "fp32:in=%s:out=%s", oc_format_info(f)->name,
           oc_format_info(f)->name);
  struct oc_tensor in[5];
  for (int t = 0; t < 5; t++)
    in[t] = T(bin[t], f);
  int64_t one = 1;
  struct oc_tensor st;
  double stepv = h->step, scalev = h->scale;
  oc_tensor_make(&st, &stepv, OC_FP64, 1, &one, NULL);
  struct oc_tensor sc;
  oc_tensor_make(&sc, &scalev, OC_FP64, 1, &one, NULL);
  for (int k = 0; k < K_NFORMS; k++) {
    if ((f == OC_FP64 && k != K_CUDA) || (f != OC_FP32 && BAD(k))) continue;
    for (int i = 0; i < N; i++) {
      float r[4];
      double rd[4];
      adam_k(k, h, (float)t_rnd(f, p[i]), (float)t_rnd(f, g[i]), (float)t_rnd(f, m[i]),
             (float)t_rnd(f, v[i]), (float)t_rnd(f, vm[i]), r);
      adam_d(h, p[i], g[i], m[i], v[i], vm[i], rd);
      for (int q = 0; q < 4; q++)
        t_put(bout[q], f, i, f == OC_FP64 ? rd[q] : t_rnd(f, r[q]));
    }
    struct oc_tensor ot[4];
    for (int q = 0; q < 4; q++)
      ot[q] = T(bout[q], f);
    struct oc_optim_args a = {.param = &in[0],
                              .grad = &in[1],
                              .exp_avg = &in[2],
                              .exp_avg_sq = &in[3],
                              .max_exp_avg_sq = h->amsgrad ? &in[4] : NULL,
                              .step = &st,
                              .grad_scale = h->scale != 1 ? &sc : NULL,
                              .lr = h->lr,
                              .beta1 = h->b1,
                              .beta2 = h->b2,
                              .eps = h->eps,
                              .weight_decay = h->wd,
                              .amsgrad = h->amsgrad,
                              .maximize = h->maximize};
    enum oc_optim_op op = h->adamw ? OC_OPTIM_ADAMW : OC_OPTIM_ADAM;
    int bad = t_fail;
    int vp = judge(op, &a, OC_OPTIM_OUT_PARAM, &ot[0], prof);
    int vm1 = judge(op, &a, OC_OPTIM_OUT_EXP_AVG, &ot[1], prof);
    int vv = judge(op, &a, OC_OPTIM_OUT_EXP_AVG_SQ, &ot[2], prof);
    int vx = h->amsgrad ? judge(op, &a, OC_OPTIM_OUT_MAX_EXP_AVG_SQ, &ot[3], prof) : OC_PASS;
    if (!BAD(k)) {
      EXPECT(vp <= OC_PASS && vm1 <= OC_PASS && vv <= OC_PASS && vx <= OC_PASS,
             "%s %s: correct %s fails (%d %d %d %d)", what, oc_format_info(f)->name, kname[k], vp,
             vm1, vv, vx);
    } else if (k == K_NO_BC) {
      EXPECT(oc_verdict_is_fail(vp), "%s: missing bias correction passes", what);
    } else {
      EXPECT(oc_verdict_is_fail(vv), "%s: %s exp_avg_sq passes", what, kname[k]);
    }
    char line[160];
    snprintf(line, sizeof line, "%s %s %s", what, oc_format_info(f)->name, kname[k]);
    t_line(line, bad);
  }
}

/* found_inf set: the old values, bit for bit; an update is a failure. */
static void found_inf_case(void) {
  static float p[N], g[N], m[N], v[N], o[N];
  static unsigned char b[5][N * 4];
  unsigned s = 11;
  fill(p, N, -1, 1, &s);
  fill(g, N, -1e-2, 1e-2, &s);
  fill(m, N, -1e-3, 1e-3, &s);
  fill(v, N, 0, 1e-5, &s);
  const float *src[4] = {p, g, m, v};
  for (int t = 0; t < 4; t++)
    for (int i = 0; i < N; i++)
      t_put(b[t], OC_FP32, i, src[t][i]);
  struct oc_tensor in[5];
  for (int t = 0; t < 5; t++)
    in[t] = T(b[t], OC_FP32);
  double inf1 = 1;
  int64_t one = 1;
  struct oc_tensor fi;
  oc_tensor_make(&fi, &inf1, OC_FP64, 1, &one, NULL);
  struct oc_optim_args a = {.param = &in[0],
                            .grad = &in[1],
                            .exp_avg = &in[2],
                            .exp_avg_sq = &in[3],
                            .found_inf = &fi,
                            .step_value = 3,
                            .lr = 1e-3,
                            .beta1 = 0.9,
                            .beta2 = 0.999,
                            .eps = 1e-8};
  int bad = t_fail;
  EXPECT(judge(OC_OPTIM_ADAMW, &a, OC_OPTIM_OUT_PARAM, &in[0], "fp32") <= OC_PASS,
         "skipped step: old param fails");
  struct hp h = {1e-3, 0.9, 0.999, 1e-8, 0, 0, 0, 1, 3, 1};
  for (int i = 0; i < N; i++) {
    float r[4];
    adam_k(K_CUDA, &h, p[i], g[i], m[i], v[i], 0, r);
    o[i] = r[0];
    t_put(b[4], OC_FP32, i, o[i]);
  }
  EXPECT(oc_verdict_is_fail(judge(OC_OPTIM_ADAMW, &a, OC_OPTIM_OUT_PARAM, &in[4], "fp32")),
         "an update despite found_inf passes");
  t_line("found_inf: old values kept", bad);
}

/* sgd: momentum (first and later steps), nesterov, weight decay,
 * maximize; the CUDA form (double constants) and the CPU form (float);
 * a momentum buffer accumulated in fp16 fails. */
static void sgd_case(const char *what, double lr, double mom, double damp, double wd, int nest,
                     int maxim, int first) {
  static float p[N], g[N], b[N];
  static unsigned char bin[3][N * 4], bout[2][N * 4];
  unsigned s = 5;
  fill(p, N, -1, 1, &s);
  fill(g, N, -1e-1, 1e-1, &s);
  fill(b, N, -1e-1, 1e-1, &s);
  const float *src[3] = {p, g, b};
  for (int t = 0; t < 3; t++)
    for (int i = 0; i < N; i++)
      t_put(bin[t], OC_FP32, i, src[t][i]);
  struct oc_tensor in[3], ot[2];
  for (int t = 0; t < 3; t++)
    in[t] = T(bin[t], OC_FP32);
  for (int k = 0; k < 3; k++) { /* cuda, cpu, fp16 buffer */
    for (int i = 0; i < N; i++) {
      float gg = maxim ? -g[i] : g[i], bb;
      if (wd != 0) gg = k == 0 ? (float)(gg + wd * p[i]) : gg + (float)wd * p[i];
      if (first)
        bb = gg;
      else if (k == 0)
        bb = (float)(mom * b[i] + (1 - damp) * gg);
      else if (k == 1)
        bb = b[i] * (float)mom + gg * (float)(1 - damp);
      else
        bb = (float)t_rnd(OC_FP16, t_rnd(OC_FP16, b[i] * mom) + t_rnd(OC_FP16, gg * (1 - damp)));
      float d = mom == 0 ? gg
                : nest   ? (k == 0 ? (float)(gg + mom * bb) : fmaf((float)mom, bb, gg))
                         : bb;
      float pn = k == 0 ? (float)(p[i] - lr * d) : p[i] - (float)lr * d;
      t_put(bout[0], OC_FP32, i, pn);
      t_put(bout[1], OC_FP32, i, bb);
    }
    for (int q = 0; q < 2; q++)
      ot[q] = T(bout[q], OC_FP32);
    struct oc_optim_args a = {.param = &in[0],
                              .grad = &in[1],
                              .momentum_buffer = mom != 0 ? &in[2] : NULL,
                              .lr = lr,
                              .momentum = mom,
                              .dampening = damp,
                              .weight_decay = wd,
                              .nesterov = nest,
                              .maximize = maxim,
                              .first_step = first};
    int bad = t_fail;
    int vp = judge(OC_OPTIM_SGD, &a, OC_OPTIM_OUT_PARAM, &ot[0], "fp32");
    int vb =
        mom != 0 ? judge(OC_OPTIM_SGD, &a, OC_OPTIM_OUT_MOMENTUM_BUFFER, &ot[1], "fp32") : OC_PASS;
    if (k < 2 || first || mom == 0)
      EXPECT(vp <= OC_PASS && vb <= OC_PASS, "%s form %d fails (%d %d)", what, k, vp, vb);
    else
      EXPECT(oc_verdict_is_fail(vb), "%s: fp16 momentum buffer passes", what);
    char line[160];
    snprintf(line, sizeof line, "sgd %s %s", what, k == 0 ? "cuda" : k == 1 ? "cpu" : "fp16 buf");
    t_line(line, bad);
  }
}

int main(void) {
  struct hp base = {1e-3, 0.9, 0.999, 1e-8, 1e-2, 0, 0, 1, 1, 1};
  struct hp h = base;
  adam_case("adamw step 1", &h, OC_FP32);
  h.step = 7;
  adam_case("adamw step 7", &h, OC_FP32);
  h.step = 100, h.amsgrad = 1;
  adam_case("adamw amsgrad step 100", &h, OC_FP32);
  h = base;
  h.adamw = 0, h.step = 3, h.maximize = 1, h.scale = 1024;
  adam_case("adam L2 maximize grad_scale", &h, OC_FP32);
  h = base;
  h.step = 2, h.wd = 0.1;
  adam_case("adamw", &h, OC_BF16);
  adam_case("adamw", &h, OC_FP64);
  found_inf_case();
  sgd_case("plain", 0.1, 0, 0, 0, 0, 0, 0);
  sgd_case("momentum first step", 0.1, 0.9, 0, 0, 0, 0, 1);
  sgd_case("momentum", 0.1, 0.9, 0, 1e-4, 0, 0, 0);
  sgd_case("momentum dampening nesterov maximize", 0.05, 0.9, 0.1, 1e-4, 1, 1, 0);
  return t_done("test_b_optim");
}
