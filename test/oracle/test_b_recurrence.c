/* test/oracle/test_b_recurrence.c — gated delta rule oracle: simulated fp32
 * recurrent kernels (two evaluation orders) pass over shapes, seeds and T up
 * to 256; a bf16 state, a dropped beta and a forgotten decay fail; NaN must
 * propagate (swallowing it is fail_special). */
#include "test_b_util.h"

enum sim {
  G_FP32,       /* fla fused_recurrent order: h *= a; v' = b(v - h^T k); h += k v'^T */
  G_FP32_ALT,   /* w = a (h^T k) first, then h = a h + k v'^T, unfused */
  G_BF16_STATE, /* state rounded to bf16 after every step */
  G_NO_BETA,    /* v' = v - h^T k */
  G_NO_DECAY,   /* a_t ignored */
  G_NAN_ZERO,   /* NaNs in the state replaced by 0 (swallowed) */
  G_COUNT
};
static const char *const sim_name[G_COUNT] = {"fp32",    "fp32_alt", "bf16_state",
                                              "no_beta", "no_decay", "nan_to_zero"};

/* q, k: [H][T][K]; v: [H][T][V]; g, b: [H][T]; out: [H][T][V] (fp32). */
static void sim(enum sim s, int H, int T, int K, int V, const double *q, const double *k,
                const double *v, const double *g, const double *b, double scale, int is_log,
                float *out) {
  float *h = malloc((size_t)K * V * sizeof *h), *w = malloc((size_t)V * sizeof *w);
  for (int hd = 0; hd < H; hd++) {
    for (int x = 0; x < K * V; x++)
      h[x] = 0;
    for (int t = 0; t < T; t++) {
      const double *kt = k + ((size_t)hd * T + t) * K, *qt = q + ((size_t)hd * T + t) * K;
      const double *vt = v + ((size_t)hd * T + t) * V;
      float a = is_log ? expf((float)g[hd * T + t]) : (float)g[hd * T + t];
      float be = (float)b[hd * T + t];
      if (s == G_NO_DECAY) a = 1;
      if (s != G_FP32_ALT)
        for (int x = 0; x < K * V; x++)
          h[x] *= a;
      for (int j = 0; j < V; j++) {
        float acc = 0;
        for (int i = 0; i < K; i++)
          acc = fmaf(h[i * V + j], (float)kt[i], acc);
        if (s == G_FP32_ALT) acc *= a;
        float d = (float)vt[j] - acc;
        w[j] = s == G_NO_BETA ? d : d * be;
      }
      for (int i = 0; i < K; i++)
        for (int j = 0; j < V; j++) {
          float hv = s == G_FP32_ALT ? a * h[i * V + j] + (float)kt[i] * w[j]
                                     : fmaf((float)kt[i], w[j], h[i * V + j]);
          if (s == G_BF16_STATE) hv = (float)t_rnd(OC_BF16, hv);
          if (s == G_NAN_ZERO && hv != hv) hv = 0;
          h[i * V + j] = hv;
        }
      for (int j = 0; j < V; j++) {
        float acc = 0;
        for (int i = 0; i < K; i++)
          acc = fmaf(h[i * V + j], (float)qt[i] * (float)scale, acc);
        out[((size_t)hd * T + t) * V + j] = acc;
      }
    }
  }
  free(h), free(w);
}

struct prob {
  int H, T, K, V;
  uint16_t *qb, *kb, *vb, *bb;
  float *gf;
  double *q, *k, *v, *g, *b;
  float *out;
  struct oc_tensor Q, Kt, Vt, G, B, O;
};

/* k rows l2-normalised (as Gated DeltaNet's qk-norm), gates log-sigmoid in
 * [-0.7, -0.01] or their exp, beta in (0, 1): the data fla sees. */
static void make(struct prob *P, int H, int T, int K, int V, uint64_t seed, int is_log) {
  P->H = H, P->T = T, P->K = K, P->V = V;
  size_t nq = (size_t)H * T * K, nv = (size_t)H * T * V, ng = (size_t)H * T;
  P->qb = malloc(nq * 2), P->kb = malloc(nq * 2), P->vb = malloc(nv * 2), P->bb = malloc(ng * 2);
  P->gf = malloc(ng * 4);
  P->q = malloc(nq * 8), P->k = malloc(nq * 8), P->v = malloc(nv * 8), P->g = malloc(ng * 8);
  P->b = malloc(ng * 8), P->out = malloc(nv * 4);
  uint64_t st = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (size_t r = 0; r < ng; r++) {
    double nrm = 0, kr[256];
    for (int i = 0; i < K; i++) {
      kr[i] = 2 * oc_rand_unit(&st) - 1;
      nrm += kr[i] * kr[i];
    }
    for (int i = 0; i < K; i++) {
      t_put(P->kb, OC_BF16, (int64_t)(r * K + i), kr[i] / sqrt(nrm));
      t_put(P->qb, OC_BF16, (int64_t)(r * K + i), 2 * oc_rand_unit(&st) - 1);
    }
    for (int j = 0; j < V; j++)
      t_put(P->vb, OC_BF16, (int64_t)(r * V + j), 2 * oc_rand_unit(&st) - 1);
    double gl = -0.01 - 0.69 * oc_rand_unit(&st);
    P->gf[r] = (float)(is_log ? gl : exp(gl));
    t_put(P->bb, OC_BF16, (int64_t)r, 0.05 + 0.9 * oc_rand_unit(&st));
  }
  int64_t sq[3] = {H, T, K}, sv[3] = {H, T, V}, sg[2] = {H, T};
  oc_tensor_make(&P->Q, P->qb, OC_BF16, 3, sq, NULL);
  oc_tensor_make(&P->Kt, P->kb, OC_BF16, 3, sq, NULL);
  oc_tensor_make(&P->Vt, P->vb, OC_BF16, 3, sv, NULL);
  oc_tensor_make(&P->G, P->gf, OC_FP32, 2, sg, NULL);
  oc_tensor_make(&P->B, P->bb, OC_BF16, 2, sg, NULL);
  oc_tensor_make(&P->O, P->out, OC_FP32, 3, sv, NULL);
  oc_tensor_gather(&P->Q, 0, 1, (int64_t)nq, P->q);
  oc_tensor_gather(&P->Kt, 0, 1, (int64_t)nq, P->k);
  oc_tensor_gather(&P->Vt, 0, 1, (int64_t)nv, P->v);
  oc_tensor_gather(&P->G, 0, 1, (int64_t)ng, P->g);
  oc_tensor_gather(&P->B, 0, 1, (int64_t)ng, P->b);
}

static void unmake(struct prob *P) {
  free(P->qb), free(P->kb), free(P->vb), free(P->bb), free(P->gf), free(P->q), free(P->k);
  free(P->v), free(P->g), free(P->b), free(P->out);
}

static int check(struct prob *P, enum sim s, const struct oc_profile *p, int is_log,
                 struct oc_verdict *vd) {
  double scale = 1 / sqrt((double)P->K);
  sim(s, P->H, P->T, P->K, P->V, P->q, P->k, P->v, P->g, P->b, scale, is_log, P->out);
  struct oc_delta_args da = {&P->Q, &P->Kt, &P->Vt, &P->G, &P->B, scale, is_log};
  return oc_check_gated_delta(&da, &P->O, p, NULL, vd);
}

static void test_sweep(void) {
  int before = t_fail;
  struct oc_profile p;
  oc_profile_parse("bf16_fp32acc:out=fp32", &p);
  static const int shapes[][4] = {
      {2, 64, 16, 16}, {1, 256, 32, 32}, {3, 128, 64, 16}, {1, 256, 64, 64}, {2, 96, 8, 24}};
  double worst = 0;
  int runs = 0;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
    for (uint64_t seed = 1; seed <= 2; seed++) {
      int is_log = (int)((si + seed) % 3 != 0);
      struct prob P;
      make(&P, shapes[si][0], shapes[si][1], shapes[si][2], shapes[si][3], seed, is_log);
      for (int s = 0; s < G_COUNT; s++) {
        if (s == G_NAN_ZERO) continue;
        struct oc_verdict vd;
        int rc = check(&P, (enum sim)s, &p, is_log, &vd);
        EXPECT(rc == 0, "rc %d", rc);
        EXPECT(vd.checked == vd.total && vd.total == (int64_t)P.H * P.T * P.V && vd.miss_prob == 0,
               "coverage %lld/%lld", (long long)vd.checked, (long long)vd.total);
        if (s <= G_FP32_ALT) {
          runs++;
          EXPECT(vd.kind == OC_PASS || vd.kind == OC_BITWISE, "%s H%d T%d K%d V%d seed %d: %s",
                 sim_name[s], P.H, P.T, P.K, P.V, (int)seed, oc_verdict_name(vd.kind));
          if (vd.ratio > worst) worst = vd.ratio;
          if (vd.kind != OC_PASS && vd.kind != OC_BITWISE) t_print_verdict(&vd);
        } else {
          EXPECT(oc_verdict_is_fail(vd.kind), "%s H%d T%d K%d V%d seed %d not caught: %s",
                 sim_name[s], P.H, P.T, P.K, P.V, (int)seed, oc_verdict_name(vd.kind));
          if (seed == 1 && si == 1) {
            printf("  %s: ", sim_name[s]);
            t_print_verdict(&vd);
          }
          if (s == G_BF16_STATE)
            EXPECT(vd.kind == OC_FAIL_PRECISION || vd.kind == OC_FAIL_VALUE, "%s",
                   oc_verdict_name(vd.kind));
        }
        if (s == G_FP32 && seed == 1 && si == 1) t_print_verdict(&vd);
      }
      unmake(&P);
    }
  printf("  %d correct-kernel runs, worst error/bound %.3g\n", runs, worst);
  EXPECT(worst > 0 && worst < 1, "worst ratio %g", worst);
  t_line("gated delta: fp32 recurrent kernels pass (T<=256); bf16 state, no beta, no decay fail",
         before);
}

/* Output bf16 profile: the kernel rounds its fp32 result once. */
static void test_bf16_out(void) {
  int before = t_fail;
  struct oc_profile p;
  oc_profile_parse("bf16_fp32acc", &p);
  struct prob P;
  make(&P, 2, 128, 32, 32, 7, 1);
  double scale = 1 / sqrt(32.0);
  sim(G_FP32, P.H, P.T, P.K, P.V, P.q, P.k, P.v, P.g, P.b, scale, 1, P.out);
  uint16_t *ob = malloc((size_t)P.H * P.T * P.V * 2);
  for (int64_t x = 0; x < (int64_t)P.H * P.T * P.V; x++)
    t_put(ob, OC_BF16, x, P.out[x]);
  struct oc_tensor O;
  int64_t sv[3] = {P.H, P.T, P.V};
  oc_tensor_make(&O, ob, OC_BF16, 3, sv, NULL);
  struct oc_delta_args da = {&P.Q, &P.Kt, &P.Vt, &P.G, &P.B, scale, 1};
  struct oc_verdict vd;
  EXPECT(oc_check_gated_delta(&da, &O, &p, NULL, &vd) == 0, "rc");
  EXPECT(vd.kind == OC_PASS || vd.kind == OC_BITWISE, "%s", oc_verdict_name(vd.kind));
  EXPECT(vd.n_bitwise > vd.checked / 2, "bitwise %lld of %lld", (long long)vd.n_bitwise,
         (long long)vd.checked);
  t_print_verdict(&vd);
  /* bad shapes are rejected */
  struct oc_delta_args bad = da;
  bad.v = &P.Q;
  EXPECT(oc_check_gated_delta(&bad, &O, &p, NULL, &vd) == -1 || P.K == P.V, "shape");
  bad = da;
  bad.gate = &P.Q;
  EXPECT(oc_check_gated_delta(&bad, &O, &p, NULL, &vd) == -1, "gate shape");
  free(ob);
  unmake(&P);
  t_line("gated delta: bf16 output rounded once passes (mostly bitwise); bad shapes rejected",
         before);
}

static void test_nan(void) {
  int before = t_fail;
  struct oc_profile p;
  oc_profile_parse("bf16_fp32acc:out=fp32", &p);
  struct prob P;
  make(&P, 2, 64, 16, 16, 3, 1);
  /* NaN in v at head 0, t = 10, column 3: column 3 of head 0 is NaN from t = 10 on */
  t_put(P.vb, OC_BF16, (0 * 64 + 10) * 16 + 3, NAN);
  P.v[(0 * 64 + 10) * 16 + 3] = NAN;
  struct oc_verdict vd;
  EXPECT(check(&P, G_FP32, &p, 1, &vd) == 0, "rc");
  EXPECT(!oc_verdict_is_fail(vd.kind) && vd.kind != OC_INCONCLUSIVE, "propagating kernel: %s",
         oc_verdict_name(vd.kind));
  EXPECT(isnan(P.out[(0 * 64 + 20) * 16 + 3]) && !isnan(P.out[(1 * 64 + 20) * 16 + 3]), "sim");
  EXPECT(check(&P, G_NAN_ZERO, &p, 1, &vd) == 0, "rc");
  EXPECT(vd.kind == OC_FAIL_SPECIAL, "swallowing kernel: %s", oc_verdict_name(vd.kind));
  t_print_verdict(&vd);
  /* NaN in k at head 1, t = 5: every column of head 1 is NaN from then on */
  t_put(P.kb, OC_BF16, (1 * 64 + 5) * 16 + 0, NAN);
  P.k[(1 * 64 + 5) * 16 + 0] = NAN;
  EXPECT(check(&P, G_FP32, &p, 1, &vd) == 0, "rc");
  EXPECT(!oc_verdict_is_fail(vd.kind), "propagating kernel (k): %s", oc_verdict_name(vd.kind));
  EXPECT(check(&P, G_NAN_ZERO, &p, 1, &vd) == 0, "rc");
  EXPECT(vd.kind == OC_FAIL_SPECIAL && vd.n_special > 0, "swallowing kernel (k): %s",
         oc_verdict_name(vd.kind));
  unmake(&P);
  t_line("gated delta: NaN in v or k propagates; a kernel that swallows it is fail_special",
         before);
}

/* Huge values in v (the extremes gate's cancelling inputs reach 1e37):
 * the fp32 state overflows on the way although the exact output may be
 * finite in double; a correct fp32 kernel then returns Inf or NaN (Inf -
 * Inf), which proves nothing: inconclusive, never fail_special. A kernel
 * that returns finite values off the bound where nothing overflows still
 * fails. */
static void test_state_overflow(void) {
  int before = t_fail;
  struct oc_profile p;
  oc_profile_parse("fp32", &p);
  struct prob P;
  make(&P, 1, 32, 16, 16, 5, 0);
  float *vf = malloc((size_t)32 * 16 * 4);
  /* columns 0, 3, .. alternate between +-3e38 over time: v - h^T k
   * reaches 6e38 */
  for (int x = 0; x < 32 * 16; x++)
    vf[x] = (x % 16) % 3 == 0 ? ((x / 16) % 2 ? 3e38f : -3e38f) : (float)P.v[x];
  for (int x = 0; x < 32 * 16; x++)
    P.v[x] = vf[x];
  int64_t sv[3] = {1, 32, 16};
  oc_tensor_make(&P.Vt, vf, OC_FP32, 3, sv, NULL);
  struct oc_verdict vd;
  EXPECT(check(&P, G_FP32, &p, 0, &vd) == 0, "rc");
  int specials = 0;
  for (int x = 0; x < 32 * 16; x++)
    specials += !isfinite(P.out[x]);
  EXPECT(specials > 0, "the simulated kernel overflowed nowhere");
  EXPECT(!oc_verdict_is_fail(vd.kind), "overflowing fp32 kernel: %s", oc_verdict_name(vd.kind));
  t_print_verdict(&vd);
  free(vf);
  unmake(&P);
  /* nothing near overflow: a wrong kernel still fails */
  make(&P, 1, 32, 16, 16, 5, 0);
  EXPECT(check(&P, G_NO_BETA, &p, 0, &vd) == 0 && oc_verdict_is_fail(vd.kind), "no beta: %s",
         oc_verdict_name(vd.kind));
  unmake(&P);
  t_line("gated delta: a state that overflows fp32 gives Inf/NaN: not a failure; no beta fails",
         before);
}

int main(void) {
  test_sweep();
  test_bf16_out();
  test_nan();
  test_state_overflow();
  return t_done("test_b_recurrence");
}
