/* test/oracle/test_b_loss.c — nll_loss and its backward
 * (oc_check_nll_loss): fp32 kernels summing in any order pass for every
 * reduction, weighted or not, with ignored rows; a mean over all N rows
 * where some are ignored, and a backward that forgets the division by
 * total_weight, fail; reduction none is bitwise; a row of -Inf selected
 * gives +Inf, every row ignored NaN. */
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

int main(void) {
  forward();
  backward();
  return t_done("test_b_loss");
}
