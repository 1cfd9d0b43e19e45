/* test/oracle/test_b_attention.c — attention oracle: a flash-style fp32
 * kernel (online softmax, causal or not) passes; forgetting the causal mask
 * is fail_value; accumulating P.V in bf16 is a precision failure; the
 * exact P.V sum (V of fp32 or narrower) judges as the MPFR one (fp64 V). */
#include "test_b_util.h"

enum { BH = 2, S = 64, D = 32 };

/* how: 0 correct online, 1 no causal mask, 2 P.V accumulated in bf16 */
static void sim(int how, int causal, const double *q, const double *k, const double *v,
                double scale, float *o) {
  for (int b = 0; b < BH; b++)
    for (int i = 0; i < S; i++) {
      float m = -INFINITY, l = 0, acc[D];
      for (int d = 0; d < D; d++)
        acc[d] = 0;
      int n = causal && how != 1 ? i + 1 : S;
      for (int j = 0; j < n; j++) {
        float s = 0;
        for (int d = 0; d < D; d++)
          s = fmaf((float)q[(b * S + i) * D + d], (float)k[(b * S + j) * D + d], s);
        s *= (float)scale;
        float nm = s > m ? s : m, cor = expf(m - nm), pj = expf(s - nm);
        l = l * cor + pj;
        for (int d = 0; d < D; d++) {
          float t = acc[d] * cor + pj * (float)v[(b * S + j) * D + d];
          acc[d] = how == 2 ? (float)t_rnd(OC_BF16, t) : t;
        }
        m = nm;
      }
      for (int d = 0; d < D; d++)
        o[(b * S + i) * D + d] = acc[d] / l;
    }
}

int main(void) {
  int before = t_fail;
  static uint16_t qb[BH * S * D], kb[BH * S * D], vb[BH * S * D];
  static double q[BH * S * D], k[BH * S * D], v[BH * S * D];
  static float o[BH * S * D];
  int64_t sh[3] = {BH, S, D};
  struct oc_tensor Q, K, V, O;
  oc_tensor_make(&Q, qb, OC_BF16, 3, sh, NULL);
  oc_tensor_make(&K, kb, OC_BF16, 3, sh, NULL);
  oc_tensor_make(&V, vb, OC_BF16, 3, sh, NULL);
  oc_tensor_make(&O, o, OC_FP32, 3, sh, NULL);
  struct oc_tensor VD;
  oc_tensor_make(&VD, v, OC_FP64, 3, sh, NULL);
  struct oc_profile p;
  oc_profile_parse("bf16_fp32acc:out=fp32:softmax=online", &p);
  for (uint64_t seed = 1; seed <= 3; seed++)
    for (int causal = 0; causal < 2; causal++)
      for (int gi = 0; gi < 2; gi++) {
        enum oc_gen g = gi ? OC_GEN_ALL_POSITIVE : OC_GEN_CANCEL;
        oc_generate(OC_GEN_CANCEL, OC_BF16, 0, BH * S, D, seed, NULL, qb);
        oc_generate(OC_GEN_CANCEL, OC_BF16, 1, BH * S, D, seed, NULL, kb);
        oc_generate(g, OC_BF16, 2, BH * S, D, seed, NULL, vb);
        oc_tensor_gather(&Q, 0, 1, BH * S * D, q);
        oc_tensor_gather(&K, 0, 1, BH * S * D, k);
        oc_tensor_gather(&V, 0, 1, BH * S * D, v);
        double scale = 1 / sqrt((double)D) * 4;
        struct oc_attention_args aa = {&Q, &K, &V, scale, causal, OC_FP32, OC_MASKED_EITHER};
        struct oc_attention_args am = {&Q, &K, &VD, scale, causal, OC_FP32, OC_MASKED_EITHER};
        for (int how = 0; how < 3; how++) {
          if (how == 1 && !causal) continue;
          sim(how, causal, q, k, v, scale, o);
          struct oc_verdict vd, vm;
          oc_check_attention(&aa, &O, &p, NULL, &vd);
          /* V as fp64 (the same values) takes the 80-bit MPFR P.V sum
           * instead of the exact one of P's pieces: the same verdict */
          oc_check_attention(&am, &O, &p, NULL, &vm);
          EXPECT(vd.kind == vm.kind && vd.checked == vm.checked &&
                     !memcmp(vd.index, vm.index, sizeof vd.index) &&
                     fabs(vd.exact - vm.exact) <= 0x1p-60 * fabs(vd.exact) + 1e-300 &&
                     fabs(vd.ratio - vm.ratio) <= 1e-9 * vd.ratio,
                 "exact P.V %s %a ratio %a, MPFR P.V %s %a ratio %a", oc_verdict_name(vd.kind),
                 vd.exact, vd.ratio, oc_verdict_name(vm.kind), vm.exact, vm.ratio);
          if (how == 0) {
            EXPECT(!oc_verdict_is_fail(vd.kind) && vd.checked == vd.total,
                   "correct causal=%d gen=%s: %s", causal, oc_gen_name(g),
                   oc_verdict_name(vd.kind));
          } else if (how == 1) {
            EXPECT(vd.kind == OC_FAIL_VALUE || vd.kind == OC_FAIL_PRECISION, "no mask: %s",
                   oc_verdict_name(vd.kind));
          } else if (g == OC_GEN_ALL_POSITIVE) {
            EXPECT(oc_verdict_is_fail(vd.kind), "bf16 PV: %s", oc_verdict_name(vd.kind));
          }
          if (seed == 1 && causal && gi) t_print_verdict(&vd);
        }
      }
  { /* 4 query heads against 2 key/value heads, not split into groups:
     * refused (it would read outside K and V) */
    int64_t qs[3] = {4, S / 2, D};
    struct oc_tensor Q4, O4;
    oc_tensor_make(&Q4, qb, OC_BF16, 3, qs, NULL);
    oc_tensor_make(&O4, o, OC_FP32, 3, qs, NULL);
    struct oc_attention_args ga = {&Q4, &K, &V, 0.125, 0, OC_FP32, OC_MASKED_EITHER};
    struct oc_verdict gv;
    EXPECT(oc_check_attention(&ga, &O4, &p, NULL, &gv) != 0, "mismatched heads refused");
  }
  t_line("attention: flash-style fp32 passes; missing causal mask and bf16 P.V caught; "
         "heads that do not broadcast refused",
         before);
  return t_done("test_b_attention");
}
