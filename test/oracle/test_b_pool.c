/* test/oracle/test_b_pool.c — 2-D pooling (oc_check_pool): fp32 kernels
 * written as ATen's loops (and other orders) pass for max pool (values
 * bit for bit, indices of any tied maximum), its backward over
 * overlapping windows, avg pool with and without the padding counted,
 * divisor_override, adaptive avg and max pool and the backwards; the near
 * misses fail: a window off by one, the padding counted when
 * count_include_pad is false, an index outside its window, a backward
 * that overwrites instead of adding, an adaptive window ending a row
 * early, a backward dividing by the wrong count. */
#include "test_b_util.h"

enum { P = 6, H = 9, W = 9, K = 3, S = 2, PAD = 1, OH = 5, OW = 5, AH = 4, AW = 4 };

static float x[P * H * W], g[P * OH * OW], o[P * OH * OW], ix[P * OH * OW], gi[P * H * W];

static void make(uint64_t *st, int ties) {
  for (int i = 0; i < P * H * W; i++)
    x[i] = ties ? (float)floor(4 * oc_rand_unit(st)) : (float)(2 * oc_rand_unit(st) - 1);
  for (int i = 0; i < P * OH * OW; i++)
    g[i] = (float)(2 * oc_rand_unit(st) - 1);
}

static struct oc_pool_args args(struct oc_tensor *X, struct oc_tensor *G, struct oc_tensor *I,
                                int oh, int ow, int cip, int64_t div) {
  int64_t sx[3] = {P, H, W}, so[3] = {P, oh, ow};
  oc_tensor_make(X, x, OC_FP32, 3, sx, NULL);
  oc_tensor_make(G, g, OC_FP32, 3, so, NULL);
  oc_tensor_make(I, ix, OC_FP32, 3, so, NULL);
  struct oc_pool_args a = {X, G, I, {K, K}, {S, S}, {PAD, PAD}, {1, 1}, cip, div};
  return a;
}

static struct oc_verdict judge(enum oc_opid op, const float *out, int oh, int ow, int cip,
                               int64_t div) {
  struct oc_tensor X, G, I, O;
  struct oc_pool_args a = args(&X, &G, &I, oh, ow, cip, div);
  int back = op == OC_ID_MAX_POOL2D_BACKWARD || op == OC_ID_AVG_POOL2D_BACKWARD ||
             op == OC_ID_ADAPTIVE_AVG_POOL2D_BACKWARD;
  int64_t so[3] = {P, back ? H : oh, back ? W : ow};
  oc_tensor_make(&O, out, OC_FP32, 3, so, NULL);
  struct oc_profile p;
  oc_profile_parse("fp32", &p);
  struct oc_verdict v;
  EXPECT(oc_check_pool(op, &a, &O, &p, NULL, &v) == 0, "rc");
  return v;
}

#define PASSES(v) (!oc_verdict_is_fail((v).kind) && (v).kind != OC_INCONCLUSIVE)

/* ATen's max pool loop; shift moves every window (a bug); last: ties to
 * the last maximum. */
static void max_pool(int shift, int last) {
  for (int p = 0; p < P; p++)
    for (int i = 0; i < OH; i++)
      for (int j = 0; j < OW; j++) {
        int h0 = i * S - PAD + shift, w0 = j * S - PAD + shift;
        int h1 = h0 + K < H ? h0 + K : H, w1 = w0 + K < W ? w0 + K : W;
        h0 = h0 < 0 ? 0 : h0, w0 = w0 < 0 ? 0 : w0;
        float m = -INFINITY;
        int at = h0 * W + w0;
        for (int h = h0; h < h1; h++)
          for (int w = w0; w < w1; w++) {
            float v = x[(p * H + h) * W + w];
            if (v > m || (last && v == m) || isnan(v)) m = v, at = h * W + w;
          }
        o[(p * OH + i) * OW + j] = m;
        ix[(p * OH + i) * OW + j] = (float)at;
      }
}

static void max_pools(void) {
  int before = t_fail;
  uint64_t st = 1;
  for (int ties = 0; ties < 2; ties++) {
    make(&st, ties);
    max_pool(0, ties);
    struct oc_verdict v = judge(OC_ID_MAX_POOL2D, o, OH, OW, 1, 0);
    EXPECT(v.kind == OC_BITWISE || v.kind == OC_PASS, "max: %s", oc_verdict_name(v.kind));
    v = judge(OC_ID_MAX_POOL2D_INDICES, ix, OH, OW, 1, 0);
    EXPECT(PASSES(v), "indices (ties to the %s): %s", ties ? "last" : "first",
           oc_verdict_name(v.kind));
  }
  make(&st, 0);
  max_pool(1, 0); /* windows one row and column late */
  struct oc_verdict v = judge(OC_ID_MAX_POOL2D, o, OH, OW, 1, 0);
  EXPECT(oc_verdict_is_fail(v.kind), "shifted window: %s", oc_verdict_name(v.kind));
  max_pool(0, 0);
  ix[7] = ix[7] + 2 * W; /* two rows below: outside the window */
  v = judge(OC_ID_MAX_POOL2D_INDICES, ix, OH, OW, 1, 0);
  EXPECT(oc_verdict_is_fail(v.kind), "index outside its window: %s", oc_verdict_name(v.kind));
  t_line("max pool: values bitwise, tied indices; a shifted window, a wrong index fail", before);
}

static void max_backward(void) {
  int before = t_fail;
  uint64_t st = 5;
  make(&st, 0);
  max_pool(0, 0);
  for (int form = 0; form < 3; form++) {
    memset(gi, 0, sizeof gi);
    for (int p = 0; p < P; p++)
      for (int r = 0; r < OH * OW; r++) {
        int q = form == 1 ? OH * OW - 1 - r : r; /* the other order */
        int at = (int)ix[p * OH * OW + q];
        float *d = &gi[p * H * W + at];
        *d = form == 2 ? g[p * OH * OW + q] : *d + g[p * OH * OW + q]; /* 2: overwrites */
      }
    struct oc_verdict v = judge(OC_ID_MAX_POOL2D_BACKWARD, gi, OH, OW, 1, 0);
    if (form == 2)
      EXPECT(oc_verdict_is_fail(v.kind), "overwriting backward: %s", oc_verdict_name(v.kind));
    else
      EXPECT(PASSES(v), "backward form %d: %s", form, oc_verdict_name(v.kind));
  }
  t_line("max pool backward: sums in either order pass; overwriting fails", before);
}

/* ATen's avg pool loop; cip: padding in the divisor; bug: counts the
 * padding regardless. */
static void avg_pool(int cip, int64_t div, int bug) {
  for (int p = 0; p < P; p++)
    for (int i = 0; i < OH; i++)
      for (int j = 0; j < OW; j++) {
        int h0 = i * S - PAD, w0 = j * S - PAD;
        int h1 = h0 + K < H + PAD ? h0 + K : H + PAD, w1 = w0 + K < W + PAD ? w0 + K : W + PAD;
        int size = (h1 - h0) * (w1 - w0);
        h0 = h0 < 0 ? 0 : h0, w0 = w0 < 0 ? 0 : w0;
        h1 = h1 < H ? h1 : H, w1 = w1 < W ? w1 : W;
        float s = 0;
        for (int h = h0; h < h1; h++)
          for (int w = w0; w < w1; w++)
            s += x[(p * H + h) * W + w];
        int d = div ? (int)div : (cip || bug) ? size : (h1 - h0) * (w1 - w0);
        o[(p * OH + i) * OW + j] = s / (float)d;
      }
}

static void avg_backward(int cip, int bug) {
  memset(gi, 0, sizeof gi);
  for (int p = 0; p < P; p++)
    for (int i = 0; i < OH; i++)
      for (int j = 0; j < OW; j++) {
        int h0 = i * S - PAD, w0 = j * S - PAD;
        int h1 = h0 + K < H + PAD ? h0 + K : H + PAD, w1 = w0 + K < W + PAD ? w0 + K : W + PAD;
        int size = (h1 - h0) * (w1 - w0);
        h0 = h0 < 0 ? 0 : h0, w0 = w0 < 0 ? 0 : w0;
        h1 = h1 < H ? h1 : H, w1 = w1 < W ? w1 : W;
        int d = (cip || bug) ? size : (h1 - h0) * (w1 - w0);
        float q = g[(p * OH + i) * OW + j] / (float)d;
        for (int h = h0; h < h1; h++)
          for (int w = w0; w < w1; w++)
            gi[(p * H + h) * W + w] += q;
      }
}

static void avg_pools(void) {
  int before = t_fail;
  uint64_t st = 9;
  make(&st, 0);
  for (int cip = 0; cip < 2; cip++) {
    avg_pool(cip, 0, 0);
    struct oc_verdict v = judge(OC_ID_AVG_POOL2D, o, OH, OW, cip, 0);
    EXPECT(PASSES(v), "avg (count_include_pad %d): %s", cip, oc_verdict_name(v.kind));
    avg_backward(cip, 0);
    v = judge(OC_ID_AVG_POOL2D_BACKWARD, gi, OH, OW, cip, 0);
    EXPECT(PASSES(v), "avg backward (count_include_pad %d): %s", cip, oc_verdict_name(v.kind));
  }
  avg_pool(0, 5, 0);
  struct oc_verdict v = judge(OC_ID_AVG_POOL2D, o, OH, OW, 0, 5);
  EXPECT(PASSES(v), "divisor_override: %s", oc_verdict_name(v.kind));
  avg_pool(0, 0, 1);
  v = judge(OC_ID_AVG_POOL2D, o, OH, OW, 0, 0);
  EXPECT(oc_verdict_is_fail(v.kind), "padding counted: %s", oc_verdict_name(v.kind));
  avg_backward(0, 1);
  v = judge(OC_ID_AVG_POOL2D_BACKWARD, gi, OH, OW, 0, 0);
  EXPECT(oc_verdict_is_fail(v.kind), "backward padding counted: %s", oc_verdict_name(v.kind));
  t_line("avg pool: with and without padding counted, divisor_override; padding counted fails",
         before);
}

/* ATen's adaptive windows; bug: end = floor((o + 1) H / OH), a row short. */
static void adaptive(int bug, int maxop) {
  for (int p = 0; p < P; p++)
    for (int i = 0; i < AH; i++)
      for (int j = 0; j < AW; j++) {
        int h0 = i * H / AH, h1 = bug ? (i + 1) * H / AH : ((i + 1) * H + AH - 1) / AH;
        int w0 = j * W / AW, w1 = bug ? (j + 1) * W / AW : ((j + 1) * W + AW - 1) / AW;
        float s = 0, m = -INFINITY;
        int at = h0 * W + w0;
        for (int h = h0; h < h1; h++)
          for (int w = w0; w < w1; w++) {
            float v = x[(p * H + h) * W + w];
            s += v;
            if (v > m) m = v, at = h * W + w;
          }
        o[(p * AH + i) * AW + j] = maxop ? m : s / (float)(h1 - h0) / (float)(w1 - w0);
        ix[(p * AH + i) * AW + j] = (float)at;
      }
}

static void adaptives(void) {
  int before = t_fail;
  uint64_t st = 13;
  make(&st, 0);
  adaptive(0, 0);
  struct oc_verdict v = judge(OC_ID_ADAPTIVE_AVG_POOL2D, o, AH, AW, 1, 0);
  EXPECT(PASSES(v), "adaptive avg: %s", oc_verdict_name(v.kind));
  adaptive(0, 1);
  v = judge(OC_ID_ADAPTIVE_MAX_POOL2D, o, AH, AW, 1, 0);
  EXPECT(PASSES(v), "adaptive max: %s", oc_verdict_name(v.kind));
  v = judge(OC_ID_ADAPTIVE_MAX_POOL2D_INDICES, ix, AH, AW, 1, 0);
  EXPECT(PASSES(v), "adaptive max indices: %s", oc_verdict_name(v.kind));
  adaptive(1, 0);
  v = judge(OC_ID_ADAPTIVE_AVG_POOL2D, o, AH, AW, 1, 0);
  EXPECT(oc_verdict_is_fail(v.kind), "adaptive window short: %s", oc_verdict_name(v.kind));
  for (int bug = 0; bug < 2; bug++) { /* backward: g / kh / kw over each window */
    memset(gi, 0, sizeof gi);
    for (int p = 0; p < P; p++)
      for (int i = 0; i < AH; i++)
        for (int j = 0; j < AW; j++) {
          int h0 = i * H / AH, h1 = ((i + 1) * H + AH - 1) / AH;
          int w0 = j * W / AW, w1 = ((j + 1) * W + AW - 1) / AW;
          float q = g[(p * AH + i) * AW + j] / (float)(h1 - h0) / (float)(w1 - w0 + bug);
          for (int h = h0; h < h1; h++)
            for (int w = w0; w < w1; w++)
              gi[(p * H + h) * W + w] += q;
        }
    v = judge(OC_ID_ADAPTIVE_AVG_POOL2D_BACKWARD, gi, AH, AW, 1, 0);
    EXPECT(bug ? oc_verdict_is_fail(v.kind) : PASSES(v), "adaptive backward (bug %d): %s", bug,
           oc_verdict_name(v.kind));
  }
  t_line("adaptive avg and max pool and backward pass; a short window, a wrong count fail", before);
}

static void specials(void) {
  int before = t_fail;
  uint64_t st = 17;
  make(&st, 0);
  x[2 * W + 2] = NAN; /* plane 0, in windows (1, 1), (1, 0)... */
  max_pool(0, 0);
  struct oc_verdict v = judge(OC_ID_MAX_POOL2D, o, OH, OW, 1, 0);
  EXPECT(PASSES(v), "NaN propagates: %s", oc_verdict_name(v.kind));
  o[1 * OW + 1] = 0.5f; /* a kernel that drops the NaN */
  v = judge(OC_ID_MAX_POOL2D, o, OH, OW, 1, 0);
  EXPECT(v.kind == OC_FAIL_SPECIAL, "dropped NaN: %s", oc_verdict_name(v.kind));
  t_line("max pool propagates NaN; a kernel that drops it fails", before);
}

int main(void) {
  max_pools();
  max_backward();
  avg_pools();
  adaptives();
  specials();
  return t_done("test_b_pool");
}
