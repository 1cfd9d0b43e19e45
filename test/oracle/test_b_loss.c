/* test/oracle/test_b_loss.c — nll_loss and its backward
 * (oc_check_nll_loss): fp32 kernels summing in any order pass for every
 * reduction, weighted or not, with ignored rows; a mean over all N rows
 * where some are ignored, and a backward that forgets the division by
 * total_weight, fail; reduction none is bitwise; a row of -Inf selected
 * gives +Inf, every row ignored NaN. nll_loss2d (x [N, C, S], target
 * [N, S]) in fp32, bf16 and fp16: ATen's CUDA form (per-sample block
 * sums in fp32 rounded to the input's type and added there in random
 * orders) and CPU form (the 8-level cascade in the input's type) pass,
 * reduction none is bitwise, channels-last strides too; a sum without the
 * weights, a mean over N S and the loss of the wrong class fail; an fp16
 * total_weight that overflows is inconclusive; the backward as the 2-D
 * one. */
#include "test_b_util.h"

enum { N = 300, C = 17, IGN = -100 };

static float x[N * C], w[C], tgt[N], o[N * C];

static void make(uint64_t *st, int ignored) {
  for (int i = 0; i < N * C; i++)
    x[i] = (float)(-8 * oc_rand_unit(st));
  for (int k = 0; k < C; k++)
    w[k] = (float)(0.5 + oc_rand_unit(st));
  for (int i = 0; i < N; i++)
    tgt[i] = ignored && i % 7 == 3 ? IGN : (float)(i * 5 % C);
}

static struct oc_verdict judge(enum oc_loss_op op, enum oc_nll_reduction red, int weighted,
                               const float *g, int64_t ng, float tw, int64_t nout) {
  struct oc_tensor X, T, W, G, TW, O;
  int64_t sn[1] = {N}, sc[1] = {C}, sg[1] = {ng}, s1[1] = {1}, so[1] = {nout};
  t_tensor2(&X, x, OC_FP32, N, C);
  oc_tensor_make(&T, tgt, OC_FP32, 1, sn, NULL);
  oc_tensor_make(&W, w, OC_FP32, 1, sc, NULL);
  oc_tensor_make(&G, g ? g : o, OC_FP32, 1, sg, NULL);
  oc_tensor_make(&TW, &tw, OC_FP32, 1, s1, NULL);
  if (op == OC_LOSS_NLL_LOSS)
    oc_tensor_make(&O, o, OC_FP32, 1, so, NULL);
  else
    t_tensor2(&O, o, OC_FP32, N, C);
  struct oc_profile p;
  oc_profile_parse("fp32", &p);
  struct oc_nll_args a = {&X, &T, weighted ? &W : NULL, &G, &TW, red, IGN};
  struct oc_verdict v;
  EXPECT(oc_check_nll_loss(op, &a, &O, &p, NULL, &v) == 0, "rc");
  return v;
}

static void forward(void) {
  int before = t_fail;
  uint64_t st = 3;
  for (int weighted = 0; weighted < 2; weighted++)
    for (int red = 0; red < 3; red++)
      for (int form = 0; form < 3; form++) {
        make(&st, 1);
        float s = 0, tw = 0, part[8] = {0}, pw[8] = {0};
        int used = 0;
        for (int i = 0; i < N; i++) {
          o[i] = 0;
          if (tgt[i] == IGN) continue;
          int k = (int)tgt[i];
          float wk = weighted ? w[k] : 1, t = wk * x[i * C + k];
          o[i] = -t;
          used++;
          if (form == 1) /* 8 partial sums (threads), then combined */
            part[i % 8] += t, pw[i % 8] += wk;
          else
            s += t, tw += wk;
        }
        if (form == 1)
          for (int j = 0; j < 8; j++)
            s += part[j], tw += pw[j];
        if (red != OC_NLL_NONE) {
          /* form 2, the bug: the mean over every row, ignored ones too */
          float den = form == 2 ? (float)N : tw;
          o[0] = red == OC_NLL_MEAN ? -s / den : -s;
        }
        struct oc_verdict v = judge(OC_LOSS_NLL_LOSS, (enum oc_nll_reduction)red, weighted, NULL, 1,
                                    0, red == OC_NLL_NONE ? N : 1);
        int bug = form == 2 && red == OC_NLL_MEAN && !weighted;
        if (bug)
          EXPECT(oc_verdict_is_fail(v.kind), "mean over ignored rows: %s", oc_verdict_name(v.kind));
        else if (form < 2 || red != OC_NLL_MEAN)
          EXPECT(red == OC_NLL_NONE ? v.kind == OC_BITWISE : !oc_verdict_is_fail(v.kind),
                 "weighted %d reduction %d form %d: %s (used %d)", weighted, red, form,
                 oc_verdict_name(v.kind), used);
      }
  /* specials: a -Inf log-probability selected; every row ignored */
  make(&st, 0);
  x[5 * C + (int)tgt[5]] = -INFINITY;
  o[0] = INFINITY;
  struct oc_verdict v = judge(OC_LOSS_NLL_LOSS, OC_NLL_MEAN, 0, NULL, 1, 0, 1);
  EXPECT(v.kind == OC_BITWISE, "-Inf selected: %s", oc_verdict_name(v.kind));
  for (int i = 0; i < N; i++)
    tgt[i] = IGN;
  o[0] = NAN;
  v = judge(OC_LOSS_NLL_LOSS, OC_NLL_MEAN, 0, NULL, 1, 0, 1);
  EXPECT(v.kind == OC_BITWISE, "every row ignored: %s", oc_verdict_name(v.kind));
  o[0] = 0;
  v = judge(OC_LOSS_NLL_LOSS, OC_NLL_MEAN, 0, NULL, 1, 0, 1);
  EXPECT(v.kind == OC_FAIL_SPECIAL, "0 for 0/0: %s", oc_verdict_name(v.kind));
  t_line("nll_loss: none bitwise, sum and mean in any order (weighted, ignored rows) pass; a mean "
         "over ignored rows fails; -Inf selected gives Inf, every row ignored NaN",
         before);
}

static void backward(void) {
  int before = t_fail;
  uint64_t st = 9;
  static float g[N];
  for (int weighted = 0; weighted < 2; weighted++)
    for (int red = 0; red < 3; red++)
      for (int bug = 0; bug < 2; bug++) {
        make(&st, 1);
        for (int i = 0; i < N; i++)
          g[i] = (float)(oc_rand_unit(&st) + 0.1);
        float tw = 0;
        for (int i = 0; i < N; i++)
          if (tgt[i] != IGN) tw += weighted ? w[(int)tgt[i]] : 1;
        for (int i = 0; i < N * C; i++)
          o[i] = 0;
        for (int i = 0; i < N; i++) {
          if (tgt[i] == IGN) continue;
          int k = (int)tgt[i];
          float gi = red == OC_NLL_NONE ? g[i] : g[0];
          /* ATen: grad = -(g / total_weight); the bug keeps g */
          float q = -(red == OC_NLL_MEAN && !bug ? gi / tw : gi);
          o[i * C + k] = weighted ? w[k] * q : q;
        }
        struct oc_verdict v = judge(OC_LOSS_NLL_LOSS_BACKWARD, (enum oc_nll_reduction)red, weighted,
                                    g, red == OC_NLL_NONE ? N : 1, tw, N * C);
        if (!bug)
          EXPECT(weighted ? !oc_verdict_is_fail(v.kind) : v.kind == OC_BITWISE,
                 "backward weighted %d reduction %d: %s", weighted, red, oc_verdict_name(v.kind));
        else if (red == OC_NLL_MEAN)
          EXPECT(oc_verdict_is_fail(v.kind), "backward without / total_weight: %s",
                 oc_verdict_name(v.kind));
      }
  t_line("nll_loss_backward: -(g / total_weight) w at each row's class, zero elsewhere (bitwise "
         "without a weight); a mean gradient without the division fails",
         before);
}

/* ---- nll_loss2d: x [N2, C2, S2] */
enum { N2 = 16, C2 = 5, S2 = 700, R2 = N2 * S2 };
static double xd[R2 * C2], wd[C2], td[R2], od[R2 * C2];
static unsigned char xb[R2 * C2 * 4], wb[C2 * 4], tb[R2 * 4], ob[R2 * C2 * 4], gb[R2 * 4], twb[8];
static double gd[R2];
static int chlast; /* x stored [N, S, C] */

static int64_t xi(int64_t r, int64_t k) {
  int64_t i = r / S2, sp = r % S2;
  return chlast ? (i * S2 + sp) * C2 + k : (i * C2 + k) * S2 + sp;
}

static void make2(uint64_t *st, enum oc_format f, double wscale, double xscale) {
  for (int64_t j = 0; j < R2 * C2; j++)
    xd[j] = t_rnd(f, -xscale * oc_rand_unit(st));
  for (int k = 0; k < C2; k++)
    wd[k] = t_rnd(f, wscale * (0.5 + oc_rand_unit(st)));
  for (int64_t r = 0; r < R2; r++)
    td[r] = r % 11 == 3 ? IGN : (double)(r * 7 % C2);
}

/* f's arithmetic: the exact result through fp32 (c10's 16-bit operators) */
static double fop(enum oc_format f, double v) { return t_rnd(f, t_rnd(OC_FP32, v)); }

static void shuffle(int64_t *ord, int64_t n, uint64_t *st) {
  for (int64_t j = 0; j < n; j++)
    ord[j] = j;
  for (int64_t j = n - 1; j > 0; j--) {
    int64_t k = (int64_t)(oc_rand_unit(st) * (double)(j + 1)) % (j + 1), t = ord[j];
    ord[j] = ord[k], ord[k] = t;
  }
}

enum { F_CUDA, F_CPU, F_NOWEIGHT, F_MEAN_NS, F_WRONG_CLASS, F_COUNT };

/* The kernel's loss sum S and total weight W in format f (form F_*). */
static void reduce2(enum oc_format f, int weighted, int form, uint64_t *st, double *s_out,
                    double *w_out) {
  static int64_t ord[S2];
  double s = 0, ws_ = 0;
  int64_t used = 0;
  double term[S2], tw[S2];
  if (form == F_CPU) { /* LossNLL2d.cpp: 8 levels, 16 terms a level */
    double ls[8] = {0}, ws[8] = {0};
    for (int64_t r = 0; r < R2; r++) {
      if (td[r] == IGN) continue;
      int k = (int)td[r];
      double wk = weighted ? wd[k] : 1;
      ls[0] = fop(f, ls[0] - fop(f, xd[xi(r, k)] * wk));
      ws[0] = fop(f, ws[0] + wk);
      used++;
      for (int j = 0; j + 1 < 8 && !(r & (15LL << (4 * j))); j++) {
        ls[j + 1] = fop(f, ls[j + 1] + ls[j]), ws[j + 1] = fop(f, ws[j + 1] + ws[j]);
        ls[j] = ws[j] = 0;
      }
    }
    for (int j = 0; j < 8; j++)
      s = fop(f, s + ls[j]), ws_ = fop(f, ws_ + ws[j]);
    *s_out = s;
    *w_out = weighted ? ws_ : t_rnd(f, (double)used);
    return;
  }
  /* NLLLoss2d.cu: one block a sample (S < 131072), its terms summed in
   * fp32 in any order, the partials rounded to f and atomically added in
   * f in any order */
  static int64_t bord[N2];
  double part[N2], pw[N2];
  for (int i = 0; i < N2; i++) {
    int64_t m = 0;
    for (int64_t sp = 0; sp < S2; sp++) {
      int64_t r = i * S2 + sp;
      if (td[r] == IGN) {
        if (form == F_MEAN_NS) tw[m] = 1, term[m++] = 0; /* counted in N S */
        continue;
      }
      int k = (int)td[r];
      if (form == F_WRONG_CLASS) k = (k + 1) % C2;
      double wk = weighted ? wd[k] : 1;
      term[m] = form == F_NOWEIGHT ? xd[xi(r, k)] : fop(f, xd[xi(r, k)] * wk);
      tw[m++] = form == F_MEAN_NS ? 1 : wk;
    }
    shuffle(ord, m, st);
    float a = 0, b = 0;
    for (int64_t j = 0; j < m; j++)
      a -= (float)term[ord[j]], b += (float)tw[ord[j]];
    part[i] = t_rnd(f, a), pw[i] = t_rnd(f, b);
  }
  shuffle(bord, N2, st);
  for (int i = 0; i < N2; i++)
    s = fop(f, s + part[bord[i]]), ws_ = fop(f, ws_ + pw[bord[i]]);
  *s_out = s, *w_out = ws_;
}

static const char *prof_of(enum oc_format f) {
  return f == OC_FP32   ? "fp32"
         : f == OC_BF16 ? "fp32:in=bf16:acc=fp32:out=bf16"
                        : "fp32:in=fp16:acc=fp32:out=fp16";
}

static struct oc_verdict judge2(enum oc_format f, enum oc_loss_op opk, enum oc_nll_reduction red,
                                int weighted, double tw) {
  struct oc_tensor X, T, W, G, TW, O;
  int64_t sx[3] = {N2, C2, S2}, stx[3] = {S2 * C2, 1, C2}, st2[2] = {N2, S2}, sc[1] = {C2},
          s1[1] = {1};
  for (int64_t j = 0; j < R2 * C2; j++)
    t_put(xb, f, j, xd[j]);
  for (int k = 0; k < C2; k++)
    t_put(wb, f, k, wd[k]);
  for (int64_t r = 0; r < R2; r++)
    t_put(tb, OC_FP32, r, td[r]), t_put(gb, f, r, gd[r]);
  t_put(twb, f, 0, tw);
  oc_tensor_make(&X, xb, f, 3, sx, chlast ? stx : NULL);
  oc_tensor_make(&T, tb, OC_FP32, 2, st2, NULL);
  oc_tensor_make(&W, wb, f, 1, sc, NULL);
  oc_tensor_make(&G, gb, f, red == OC_NLL_NONE ? 2 : 1, red == OC_NLL_NONE ? st2 : s1, NULL);
  oc_tensor_make(&TW, twb, f, 1, s1, NULL);
  int64_t no = opk == OC_LOSS_NLL_LOSS_BACKWARD ? R2 * C2 : red == OC_NLL_NONE ? R2 : 1;
  for (int64_t j = 0; j < no; j++)
    t_put(ob, f, j, od[j]);
  if (opk == OC_LOSS_NLL_LOSS_BACKWARD)
    oc_tensor_make(&O, ob, f, 3, sx, NULL);
  else if (red == OC_NLL_NONE)
    oc_tensor_make(&O, ob, f, 2, st2, NULL);
  else
    oc_tensor_make(&O, ob, f, 1, s1, NULL);
  struct oc_profile p;
  oc_profile_parse(prof_of(f), &p);
  struct oc_nll_args a = {&X, &T, weighted ? &W : NULL, &G, &TW, red, IGN};
  struct oc_verdict v;
  EXPECT(oc_check_nll_loss(opk, &a, &O, &p, NULL, &v) == 0, "rc");
  return v;
}

static void spatial(void) {
  int before = t_fail;
  uint64_t st = 21;
  enum oc_format fs[3] = {OC_FP32, OC_BF16, OC_FP16};
  for (int fi = 0; fi < 3; fi++)
    for (int weighted = 0; weighted < 2; weighted++) {
      enum oc_format f = fs[fi];
      chlast = fi == 1;
      make2(&st, f, 1, 8);
      /* none: bitwise */
      for (int64_t r = 0; r < R2; r++) {
        int k = (int)td[r];
        od[r] = td[r] == IGN ? 0 : t_rnd(f, -(xd[xi(r, k)] * (weighted ? wd[k] : 1)));
      }
      struct oc_verdict v = judge2(f, OC_LOSS_NLL_LOSS, OC_NLL_NONE, weighted, 0);
      EXPECT(v.kind == OC_BITWISE, "2d none %s weighted %d: %s", prof_of(f), weighted,
             oc_verdict_name(v.kind));
      for (int red = OC_NLL_MEAN; red <= OC_NLL_SUM; red++)
        for (int form = 0; form < F_COUNT; form++)
          for (int rep = 0; rep < (form < F_NOWEIGHT ? 4 : 1); rep++) {
            double s, sw;
            reduce2(f, weighted, form, &st, &s, &sw);
            od[0] = red == OC_NLL_MEAN ? fop(f, s / sw) : s;
            v = judge2(f, OC_LOSS_NLL_LOSS, (enum oc_nll_reduction)red, weighted, 0);
            int bug = (form == F_NOWEIGHT && weighted) ||
                      (form == F_MEAN_NS && red == OC_NLL_MEAN) || form == F_WRONG_CLASS;
            if (form < F_NOWEIGHT || (form == F_NOWEIGHT && !weighted))
              EXPECT(v.kind == OC_PASS || v.kind == OC_BITWISE,
                     "2d %s weighted %d red %d form %d: %s %s", prof_of(f), weighted, red, form,
                     oc_verdict_name(v.kind), v.detail);
            else if (bug && f == OC_FP32)
              EXPECT(oc_verdict_is_fail(v.kind), "2d bug %s weighted %d red %d form %d: %s",
                     prof_of(f), weighted, red, form, oc_verdict_name(v.kind));
          }
    }
  chlast = 0;
  /* fp16: total_weight beyond 65504 (a weight of 1000 on 10^4 rows): the
   * kernel's mean is S / Inf = 0, or Inf / Inf = NaN: inconclusive */
  for (int big = 0; big < 2; big++) {
    make2(&st, OC_FP16, 0, big ? 8 : 1e-3);
    for (int k = 0; k < C2; k++)
      wd[k] = 1000;
    double s, sw;
    reduce2(OC_FP16, 1, F_CUDA, &st, &s, &sw);
    od[0] = fop(OC_FP16, s / sw);
    struct oc_verdict v = judge2(OC_FP16, OC_LOSS_NLL_LOSS, OC_NLL_MEAN, 1, 0);
    EXPECT(v.kind == OC_INCONCLUSIVE && (big || od[0] == 0),
           "fp16 total_weight overflow (out %g): %s %s", od[0], oc_verdict_name(v.kind), v.detail);
  }
  t_line("nll_loss2d: none bitwise; sum and mean as ATen's CUDA (block partials rounded to the "
         "input's type, atomic adds in random orders) and CPU (cascade in the input's type) "
         "forms pass in fp32, bf16 (channels-last), fp16; a sum without the weights, a mean over "
         "N S, the wrong class fail; an fp16 total_weight overflow is inconclusive",
         before);
}

static void spatial_backward(void) {
  int before = t_fail;
  uint64_t st = 33;
  enum oc_format fs[3] = {OC_FP32, OC_BF16, OC_FP16};
  for (int fi = 0; fi < 3; fi++)
    for (int weighted = 0; weighted < 2; weighted++)
      for (int red = 0; red < 3; red++)
        for (int bug = 0; bug < 2; bug++) {
          enum oc_format f = fs[fi];
          make2(&st, f, 1, 8);
          for (int64_t r = 0; r < R2; r++)
            gd[r] = t_rnd(f, oc_rand_unit(&st) + 0.1);
          double tw = 0;
          for (int64_t r = 0; r < R2; r++)
            if (td[r] != IGN) tw += weighted ? wd[(int)td[r]] : 1;
          tw = t_rnd(f, tw);
          for (int64_t j = 0; j < R2 * C2; j++)
            od[j] = 0;
          for (int64_t r = 0; r < R2; r++) {
            if (td[r] == IGN) continue;
            int k = (int)td[r];
            double gi = red == OC_NLL_NONE ? gd[r] : gd[0];
            double q = red == OC_NLL_MEAN && !bug ? fop(f, -(gi / tw)) : -gi;
            od[((r / S2) * C2 + k) * S2 + r % S2] = weighted ? fop(f, wd[k] * q) : q;
          }
          struct oc_verdict v =
              judge2(f, OC_LOSS_NLL_LOSS_BACKWARD, (enum oc_nll_reduction)red, weighted, tw);
          if (!bug)
            EXPECT(weighted ? v.kind == OC_PASS || v.kind == OC_BITWISE : v.kind == OC_BITWISE,
                   "2d backward %s weighted %d red %d: %s", prof_of(f), weighted, red,
                   oc_verdict_name(v.kind));
          else if (red == OC_NLL_MEAN)
            EXPECT(oc_verdict_is_fail(v.kind), "2d backward without / total_weight %s: %s",
                   prof_of(f), oc_verdict_name(v.kind));
        }
  t_line("nll_loss2d_backward: -(g / total_weight) w at (n, t, s), zero elsewhere, in fp32, "
         "bf16, fp16 (bitwise without a weight); without the division fails",
         before);
}

int main(void) {
  forward();
  backward();
  spatial();
  spatial_backward();
  return t_done("test_b_loss");
}
