/* test/oracle/test_b_attention_grad.c — attention_backward: dq, dk, dv of
 * simulated fused kernels (float arithmetic from bf16 or fp32 inputs, P
 * recomputed from the saved lse, D from the saved o or as sum P dP, P and
 * dS cast to the input type, keys in either order) pass under the
 * binding's profiles, causal and not; a backward that drops D, forgets
 * the scale, ignores the causal mask, masks the diagonal key too or
 * accumulates in fp16 fails; a NaN
 * input or an lse of another convention is inconclusive. */
#include "test_b_util.h"

enum { BH = 2, SMAX = 256, DH = 64 };

enum {
  REV = 1,      /* keys (dq) and queries (dk, dv) summed from the end */
  D_P = 2,      /* D as sum_j P dP instead of rowsum(dO o) */
  NO_D = 4,     /* dS = P dP: D dropped */
  NO_SCALE = 8, /* dq, dk without the softmax scale */
  NO_CAUSAL = 16,
  FP16_ACC = 32, /* dq, dk, dv accumulated in fp16 */
  DIAG_OFF = 64, /* causal mask one key too far: the diagonal key dropped */
  P_FP32 = 128,  /* P and dS kept in float (not cast to the input type) */
};

struct tc {
  int S, causal;
  enum oc_format in; /* bf16 or fp32 */
  double scale;
  double q[BH * SMAX * DH], k[BH * SMAX * DH], v[BH * SMAX * DH], g[BH * SMAX * DH];
  double o[BH * SMAX * DH], lse[BH * SMAX];
};

static uint64_t rng;
static double urand(void) { /* uniform [0, 1) */
  rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(rng >> 11) * 0x1p-53;
}

/* Inputs rounded to t->in; the forward's o (rounded to t->in) and lse
 * (fp32) from a double evaluation, as a correct forward leaves them. */
/* The BH heads are one key/value head's query heads; the later heads
 * repeat head 0's queries with its output gradient negated (and moved by
 * up to 2^-6): their parts of dk, dv nearly cancel, so each part's rounding
 * to bf16 is far above an fp32 sum's error of the small total. */
static int share_kv;

static void make(struct tc *t, uint64_t seed, int gpos) {
  rng = seed;
  int n = BH * t->S * DH;
  for (int i = 0; i < n; i++) {
    t->q[i] = t_rnd(t->in, (urand() * 2 - 1) * 1.5);
    t->k[i] = t_rnd(t->in, (urand() * 2 - 1) * 1.5);
    t->v[i] = t_rnd(t->in, urand() * 2 - 1);
    t->g[i] = t_rnd(t->in, gpos ? 0.5 + urand() * 0.5 : urand() * 2 - 1);
  }
  for (int i = t->S * DH; share_kv && i < n; i++) {
    int i0 = i % (t->S * DH);
    t->k[i] = t->k[i0], t->v[i] = t->v[i0], t->q[i] = t->q[i0];
    t->g[i] = t_rnd(t->in, -t->g[i0] * (1 + 0x1p-6 * urand()));
  }
  static double p[SMAX];
  for (int b = 0; b < BH; b++)
    for (int i = 0; i < t->S; i++) {
      int nk = t->causal ? i + 1 : t->S;
      double m = -INFINITY, sum = 0x1p-1074; /* nk >= 1: the max's term is 1 */
      for (int j = 0; j < nk; j++) {
        double s = 0;
        for (int d = 0; d < DH; d++)
          s += t->q[(b * t->S + i) * DH + d] * t->k[(b * t->S + j) * DH + d];
        p[j] = s * t->scale;
        m = fmax(m, p[j]);
      }
      for (int j = 0; j < nk; j++)
        sum += p[j] = exp(p[j] - m);
      t->lse[b * t->S + i] = (float)(m + log(sum));
      for (int d = 0; d < DH; d++) {
        double acc = 0;
        for (int j = 0; j < nk; j++)
          acc += p[j] / sum * t->v[(b * t->S + j) * DH + d];
        t->o[(b * t->S + i) * DH + d] = t_rnd(t->in, acc);
      }
    }
}

static float acc_add(int how, float a, float x) {
  float r = a + x;
  return how & FP16_ACC ? (float)t_rnd(OC_FP16, r) : r;
}

/* A fused backward in float: dq, dk, dv rounded to t->in. */
static void sim(const struct tc *t, int how, double *dq, double *dk, double *dv) {
  enum oc_format pf = how & P_FP32 ? OC_FP32 : t->in;
  int S = t->S;
  static float aq[SMAX * DH], ak[SMAX * DH], av[SMAX * DH], P[SMAX], dS[SMAX];
  float sc = (float)t->scale;
  for (int b = 0; b < BH; b++) {
    memset(aq, 0, sizeof aq), memset(ak, 0, sizeof ak), memset(av, 0, sizeof av);
    const double *q = t->q + b * S * DH, *k = t->k + b * S * DH, *v = t->v + b * S * DH;
    const double *g = t->g + b * S * DH, *o = t->o + b * S * DH;
    for (int ii = 0; ii < S; ii++) {
      int i = how & REV ? S - 1 - ii : ii;
      int n = t->causal && !(how & NO_CAUSAL) ? (how & DIAG_OFF ? i : i + 1) : S;
      float D = 0, l = (float)t->lse[b * S + i];
      for (int d = 0; d < DH; d++)
        D = fmaf((float)g[i * DH + d], (float)o[i * DH + d], D);
      float dp[SMAX];
      for (int j = 0; j < n; j++) {
        float s = 0, dpj = 0;
        for (int d = 0; d < DH; d++) {
          s = fmaf((float)q[i * DH + d], (float)k[j * DH + d], s);
          dpj = fmaf((float)g[i * DH + d], (float)v[j * DH + d], dpj);
        }
        P[j] = expf(s * sc - l);
        dp[j] = dpj;
      }
      if (how & D_P) {
        D = 0;
        for (int j = 0; j < n; j++)
          D += P[j] * dp[j];
      }
      for (int j = 0; j < n; j++)
        dS[j] = (float)t_rnd(pf, P[j] * (dp[j] - (how & NO_D ? 0 : D)));
      for (int jj = 0; jj < n; jj++) {
        int j = how & REV ? n - 1 - jj : jj;
        float pc = (float)t_rnd(pf, P[j]);
        for (int d = 0; d < DH; d++) {
          aq[i * DH + d] = acc_add(how, aq[i * DH + d], dS[j] * (float)k[j * DH + d]);
          ak[j * DH + d] = acc_add(how, ak[j * DH + d], dS[j] * (float)q[i * DH + d]);
          av[j * DH + d] = acc_add(how, av[j * DH + d], pc * (float)g[i * DH + d]);
        }
      }
    }
    float s2 = how & NO_SCALE ? 1.0f : sc;
    for (int x = 0; x < S * DH; x++) {
      dq[b * S * DH + x] = t_rnd(t->in, aq[x] * s2);
      dk[b * S * DH + x] = t_rnd(t->in, ak[x] * s2);
      dv[b * S * DH + x] = t_rnd(t->in, av[x]);
    }
  }
}

static struct tc T;
static double gq[BH * SMAX * DH], gk[BH * SMAX * DH], gv[BH * SMAX * DH];
static unsigned char bq[BH * SMAX * DH * 4], bk[sizeof bq], bv[sizeof bq], bg[sizeof bq],
    bo[sizeof bq], bl[BH * SMAX * 4], bout[3][sizeof bq];

/* Encodes the case and the three results; judges output w into *v. */
static int judge(const struct oc_profile *p, int w, struct oc_verdict *v) {
  int n = BH * T.S * DH;
  for (int i = 0; i < n; i++) {
    t_put(bq, T.in, i, T.q[i]), t_put(bk, T.in, i, T.k[i]), t_put(bv, T.in, i, T.v[i]);
    t_put(bg, T.in, i, T.g[i]), t_put(bo, T.in, i, T.o[i]);
    t_put(bout[0], T.in, i, gq[i]), t_put(bout[1], T.in, i, gk[i]), t_put(bout[2], T.in, i, gv[i]);
  }
  for (int i = 0; i < BH * T.S; i++)
    t_put(bl, OC_FP32, i, T.lse[i]);
  int64_t sh[3] = {BH, T.S, DH}, shl[2] = {BH, T.S};
  struct oc_tensor Q, K, V, G, O, L, OUT;
  oc_tensor_make(&Q, bq, T.in, 3, sh, NULL), oc_tensor_make(&K, bk, T.in, 3, sh, NULL);
  oc_tensor_make(&V, bv, T.in, 3, sh, NULL), oc_tensor_make(&G, bg, T.in, 3, sh, NULL);
  oc_tensor_make(&O, bo, T.in, 3, sh, NULL), oc_tensor_make(&L, bl, OC_FP32, 2, shl, NULL);
  oc_tensor_make(&OUT, bout[w], T.in, 3, sh, NULL);
  struct oc_attention_grad_args a = {&Q, &K,      &V,       &O,   &G,
                                     &L, T.scale, T.causal, T.in, (enum oc_attn_grad_which)w};
  return oc_check_attention_backward(&a, &OUT, p, NULL, v);
}

static const char *const WN[3] = {"dq", "dk", "dv"};

/* The binding's profiles (python/kcheck/torch/profiles.py, class attention). */
static void prof(enum oc_format in, struct oc_profile *p) {
  oc_profile_parse(in == OC_BF16 ? "tensorcore_fp32:in=bf16:out=bf16:softmax=online:ftz=1"
                                 : "tensorcore_tf32:in=fp32:out=fp32:softmax=online:ftz=1",
                   p);
}

static void correct(void) {
  int before = t_fail;
  static const int hows[] = {0, REV, D_P, REV | D_P};
  for (int fi = 0; fi < 2; fi++)
    for (int causal = 0; causal < 2; causal++)
      for (uint64_t seed = 1; seed <= 2; seed++) {
        T.S = 96, T.causal = causal, T.in = fi ? OC_FP32 : OC_BF16;
        T.scale = 1 / sqrt((double)DH);
        make(&T, seed, 0);
        struct oc_profile p;
        prof(T.in, &p);
        for (size_t h = 0; h < sizeof hows / sizeof *hows; h++) {
          sim(&T, hows[h], gq, gk, gv);
          for (int w = 0; w < 3; w++) {
            struct oc_verdict v;
            int r = judge(&p, w, &v);
            EXPECT(r == 0 && (v.kind == OC_PASS || v.kind == OC_BITWISE) && v.checked == v.total,
                   "%s correct how=%d %s causal=%d: %s ratio %g", WN[w], hows[h],
                   oc_format_info(T.in)->name, causal, oc_verdict_name(v.kind), v.ratio);
            if (seed == 1 && h == 0 && causal) t_print_verdict(&v);
          }
        }
      }
  t_line("attention_backward: float kernels of any order and either D pass (bf16, fp32)", before);
}

/* Each wrong kernel fails the outputs it changes. */
static void wrong(void) {
  int before = t_fail;
  struct {
    int how, mask; /* outputs expected to fail: bit w */
    const char *what;
  } cases[] = {{NO_D, 3, "D dropped"},
               {NO_SCALE, 3, "scale missing"},
               {NO_CAUSAL, 7, "causal mask ignored"},
               {DIAG_OFF, 7, "diagonal key masked"}};
  for (int fi = 0; fi < 2; fi++)
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
      T.S = 96, T.causal = 1, T.in = fi ? OC_FP32 : OC_BF16;
      T.scale = 1 / sqrt((double)DH);
      make(&T, 7, 0);
      struct oc_profile p;
      prof(T.in, &p);
      sim(&T, cases[c].how, gq, gk, gv);
      for (int w = 0; w < 3; w++) {
        if (!(cases[c].mask >> w & 1)) continue;
        struct oc_verdict v;
        judge(&p, w, &v);
        EXPECT(oc_verdict_is_fail(v.kind), "%s %s %s: %s ratio %g", WN[w], cases[c].what,
               oc_format_info(T.in)->name, oc_verdict_name(v.kind), v.ratio);
        if (w == 0 && fi == 0) t_print_verdict(&v);
      }
    }
  t_line("attention_backward: a dropped D, a missing scale, no or one-off causal mask fail",
         before);
}

/* fp16 accumulation at a GPT step's sizes (seq 256, head dim 64): dv,
 * a sum of positive terms when dO is positive, fails; fp32 passes. */
static void fp16_acc(void) {
  int before = t_fail;
  T.S = 256, T.causal = 1, T.in = OC_BF16, T.scale = 1 / sqrt((double)DH);
  make(&T, 11, 1);
  struct oc_profile p;
  prof(T.in, &p);
  struct oc_verdict v;
  sim(&T, 0, gq, gk, gv);
  judge(&p, 2, &v);
  EXPECT(v.kind == OC_PASS || v.kind == OC_BITWISE, "dv fp32 acc at 256: %s ratio %g",
         oc_verdict_name(v.kind), v.ratio);
  sim(&T, FP16_ACC, gq, gk, gv);
  judge(&p, 2, &v);
  EXPECT(oc_verdict_is_fail(v.kind), "dv fp16 acc at 256: %s ratio %g", oc_verdict_name(v.kind),
         v.ratio);
  t_print_verdict(&v);
  t_line("attention_backward: fp16 accumulation at seq 256 caught, fp32 passes", before);
}

/* A NaN input, an lse in log2 units: inconclusive, never a failure. */
static void specials(void) {
  int before = t_fail;
  T.S = 32, T.causal = 0, T.in = OC_BF16, T.scale = 1 / sqrt((double)DH);
  make(&T, 3, 0);
  struct oc_profile p;
  prof(T.in, &p);
  sim(&T, 0, gq, gk, gv);
  T.v[5] = NAN;
  for (int w = 0; w < 3; w++) {
    gq[w] = NAN; /* whatever the kernel gave */
    struct oc_verdict v;
    judge(&p, w, &v);
    EXPECT(v.kind == OC_INCONCLUSIVE, "%s NaN in v: %s (%s)", WN[w], oc_verdict_name(v.kind),
           v.detail);
  }
  make(&T, 3, 0);
  sim(&T, 0, gq, gk, gv);
  for (int i = 0; i < BH * T.S; i++)
    T.lse[i] *= M_LOG2E;
  struct oc_verdict v;
  judge(&p, 0, &v);
  EXPECT(v.kind == OC_INCONCLUSIVE, "lse in log2: %s (%s)", oc_verdict_name(v.kind), v.detail);
  t_print_verdict(&v);
  t_line("attention_backward: NaN inputs and another lse convention are inconclusive", before);
}

/* Grouped-query dk/dv (the BH heads one key/value head's query heads) as
 * ATen's flash backward forms them: each head's part rounded to bf16
 * (dk_expanded), the parts summed in float and rounded; P kept in float,
 * so that the parts' rounding is the error that decides. Judged with the
 * binding's partial=bf16 they pass, without it they fail; dv accumulated
 * in fp16 still fails. */
static void grouped(void) {
  int before = t_fail;
  share_kv = 1;
  T.S = 256, T.causal = 1, T.in = OC_BF16, T.scale = 1 / sqrt((double)DH);
  make(&T, 5, 1); /* dO positive: dv a sum of positive terms (as fp16_acc) */
  share_kv = 0;
  struct oc_profile p;
  oc_profile_parse("tensorcore_fp32:in=bf16:out=bf16:softmax=online:ftz=1:partial=bf16", &p);
  static unsigned char bout1[sizeof bq];
  int n = BH * T.S * DH, m = T.S * DH;
  for (int i = 0; i < n; i++) {
    t_put(bq, T.in, i, T.q[i]), t_put(bg, T.in, i, T.g[i]), t_put(bo, T.in, i, T.o[i]);
    if (i < m) t_put(bk, T.in, i, T.k[i]), t_put(bv, T.in, i, T.v[i]);
  }
  for (int i = 0; i < BH * T.S; i++)
    t_put(bl, OC_FP32, i, T.lse[i]);
  int64_t shq[4] = {1, BH, T.S, DH}, shkv[3] = {1, T.S, DH}, shl[3] = {1, BH, T.S};
  struct oc_tensor Q, K, V, G, O, L, OUT;
  oc_tensor_make(&Q, bq, T.in, 4, shq, NULL), oc_tensor_make(&G, bg, T.in, 4, shq, NULL);
  oc_tensor_make(&O, bo, T.in, 4, shq, NULL), oc_tensor_make(&L, bl, OC_FP32, 3, shl, NULL);
  oc_tensor_make(&K, bk, T.in, 3, shkv, NULL), oc_tensor_make(&V, bv, T.in, 3, shkv, NULL);
  /* P kept in float (p_format fp32): the parts' rounding is then the
   * largest error, which the bound must hold with partial= and not without */
  for (int how = P_FP32; how <= (P_FP32 | FP16_ACC); how += FP16_ACC) {
    sim(&T, how, gq, gk, gv);
    for (int w = how & FP16_ACC ? 2 : 1; w < 3; w++) {
      const double *part = w == 1 ? gk : gv; /* per head, rounded to bf16 */
      for (int i = 0; i < m; i++)
        t_put(bout1, T.in, i, t_rnd(T.in, (float)part[i] + (float)part[m + i]));
      oc_tensor_make(&OUT, bout1, T.in, 3, shkv, NULL);
      struct oc_attention_grad_args a = {
          &Q, &K, &V, &O, &G, &L, T.scale, T.causal, OC_FP32, (enum oc_attn_grad_which)w};
      struct oc_verdict v;
      int r = oc_check_attention_backward(&a, &OUT, &p, NULL, &v);
      if (!(how & FP16_ACC)) {
        EXPECT(r == 0 && (v.kind == OC_PASS || v.kind == OC_BITWISE) && v.checked == v.total,
               "grouped %s with bf16 parts: %s ratio %g", WN[w], oc_verdict_name(v.kind), v.ratio);
        /* without partial= the parts' rounding is outside the fp32 bound */
        struct oc_profile p32 = p;
        p32.partial = 0;
        r = oc_check_attention_backward(&a, &OUT, &p32, NULL, &v);
        EXPECT(r == 0 && oc_verdict_is_fail(v.kind), "grouped %s with bf16 parts, no partial=: %s",
               WN[w], oc_verdict_name(v.kind));
      } else
        EXPECT(r == 0 && oc_verdict_is_fail(v.kind), "grouped %s fp16 acc: %s ratio %g", WN[w],
               oc_verdict_name(v.kind), v.ratio);
    }
  }
  t_line("attention_backward: grouped dk/dv from bf16 parts per query head pass under "
         "partial=bf16 (fail without it); dv accumulated in fp16 still fails",
         before);
}

int main(void) {
  correct();
  grouped();
  wrong();
  fp16_acc();
  specials();
  return t_done("test_b_attention_grad");
}
