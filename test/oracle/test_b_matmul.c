/* test/oracle/test_b_matmul.c — GEMM oracle: simulated correct kernels
 * (any fp32 order, FMA, pairwise, split-K, tensor-core truncation) never
 * fail; fp16/bf16/14-bit accumulators always fail_precision on the
 * adversarial generators; sampling, screen, epilogues and specials. */
#include "test_b_util.h"

/* Fills a (M x K) and b (K x N) from generator g in format fin and describes
 * them, with the output o (M x N) in format fout, as A, B and O. */
static void gemm_tensors(struct oc_tensor *A, struct oc_tensor *B, struct oc_tensor *O,
                         enum oc_gen g, enum oc_format fin, enum oc_format fout, int64_t M,
                         int64_t N, int64_t K, uint64_t seed, void *a, void *b, void *o) {
  oc_generate(g, fin, OC_ROLE_A, M, K, seed, NULL, a);
  oc_generate(g, fin, OC_ROLE_B, K, N, seed, NULL, b);
  t_tensor2(A, a, fin, M, K);
  t_tensor2(B, b, fin, K, N);
  t_tensor2(O, o, fout, M, N);
}

/* Writes sim s's product of the 2-D tensors A and B into O's data o. */
static void sim_gemm(enum t_sim s, const struct oc_tensor *A, const struct oc_tensor *B,
                     const struct oc_tensor *O, void *o) {
  int64_t M = A->shape[0], K = A->shape[1], N = B->shape[1];
  double *ad = malloc((size_t)(M * K) * 8), *bd = malloc((size_t)(K * N) * 8),
         *col = malloc((size_t)K * 8);
  oc_tensor_gather(A, 0, 1, M * K, ad);
  oc_tensor_gather(B, 0, 1, K * N, bd);
  for (int64_t j = 0; j < N; j++) {
    for (int64_t k = 0; k < K; k++)
      col[k] = bd[k * N + j];
    for (int64_t i = 0; i < M; i++)
      t_put(o, O->fmt, i * N + j, t_sim_dot(s, ad + i * K, col, K));
  }
  free(ad), free(bd), free(col);
}

/* Runs sim s on generated A (M x K), B (K x N) in format fin; writes the
 * output in fout and judges it under profile spec. */
static struct oc_verdict run(enum t_sim s, enum oc_gen g, enum oc_format fin, enum oc_format fout,
                             int64_t M, int64_t N, int64_t K, uint64_t seed, const char *spec) {
  size_t es = oc_format_size(fin);
  void *a = malloc((size_t)(M * K) * es), *b = malloc((size_t)(K * N) * es);
  void *o = malloc((size_t)(M * N) * oc_format_size(fout));
  struct oc_tensor A, B, O;
  gemm_tensors(&A, &B, &O, g, fin, fout, M, N, K, seed, a, b, o);
  sim_gemm(s, &A, &B, &O, o);
  struct oc_profile p;
  if (oc_profile_parse(spec, &p)) {
    printf("bad profile %s\n", spec);
    exit(2);
  }
  struct oc_options opt;
  oc_options_default(&opt);
  struct oc_matmul_args ma = {&A, &B, NULL, NULL, 1, 0, OC_ACT_NONE};
  struct oc_verdict v;
  if (oc_check_matmul(&ma, &O, &p, &opt, &v)) {
    printf("check failed to run\n");
    exit(2);
  }
  free(a), free(b), free(o);
  return v;
}

static void never_fail(void) {
  static const int64_t Ks[] = {16, 64, 256, 1024, 4096, 16384};
  static const enum oc_gen gens[] = {OC_GEN_UNIFORM, OC_GEN_ALL_POSITIVE, OC_GEN_STAGNATION,
                                     OC_GEN_CANCEL, OC_GEN_FP16_OVERFLOW};
  struct {
    enum t_sim s;
    enum oc_format in, out;
    const char *spec;
  } const cases[] = {
      {SIM_FP32_SEQ, OC_BF16, OC_BF16, "bf16_fp32acc"},
      {SIM_FP32_FMA, OC_BF16, OC_FP32, "bf16_fp32acc:out=fp32"},
      {SIM_FP32_PAIRWISE, OC_BF16, OC_FP32, "bf16_fp32acc:out=fp32"},
      {SIM_FP32_SPLITK, OC_FP16, OC_FP32, "fp16_fp32acc:out=fp32"},
      {SIM_FP32_REVERSE, OC_FP16, OC_FP16, "fp16_fp32acc"},
      {SIM_TC_TRUNC, OC_BF16, OC_FP32, "tensorcore_fp32"},
      {SIM_FP32_SEQ, OC_FP32, OC_FP32, "fp32"},
      {SIM_FP32_FMA, OC_FP32, OC_FP32, "fp32"},
      {SIM_FP32_PAIRWISE, OC_FP32, OC_FP32, "fp32"},
  };
  double worst = 0;
  char wname[160] = "";
  int before = t_fail, n = 0, rej = 0;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++)
      for (size_t gi = 0; gi < sizeof gens / sizeof gens[0]; gi++)
        for (uint64_t seed = 1; seed <= (Ks[ki] >= 4096 ? 1u : 3u); seed++) {
          if (gens[gi] == OC_GEN_FP16_OVERFLOW && cases[c].in == OC_FP32) continue;
          int64_t mn = Ks[ki] >= 4096 ? 2 : 4;
          struct oc_verdict v = run(cases[c].s, gens[gi], cases[c].in, cases[c].out, mn, mn + 1,
                                    Ks[ki], seed, cases[c].spec);
          n++;
          rej += v.stat == OC_STAT_REJECTED;
          if (v.kind != OC_FAIL_SPECIAL && v.ratio > worst && v.ratio < INFINITY) {
            worst = v.ratio;
            snprintf(wname, sizeof wname, "%s %s K=%lld %s", t_sim_name[cases[c].s], cases[c].spec,
                     (long long)Ks[ki], oc_gen_name(gens[gi]));
          }
          EXPECT(!oc_verdict_is_fail(v.kind) && v.kind != OC_INCONCLUSIVE,
                 "%s %s K=%lld gen=%s seed=%llu: %s", t_sim_name[cases[c].s], cases[c].spec,
                 (long long)Ks[ki], oc_gen_name(gens[gi]), (unsigned long long)seed,
                 oc_verdict_name(v.kind));
          if (oc_verdict_is_fail(v.kind)) t_print_verdict(&v);
        }
  printf("  %d correct-kernel runs, %d statistically rejected, worst error/bound %.3f (%s)\n", n,
         rej, worst, wname);
  t_line("correct fp32/FMA/pairwise/split-K/tensor-core kernels never fail (K 16..16384)", before);
}

static void always_fail(void) {
  struct {
    enum t_sim s;
    int64_t K[3];
    const char *want;
  } const cases[] = {
      {SIM_FP16_ACC, {64, 256, 1024}, "fp16"},
      {SIM_BF16_ACC, {16, 64, 128}, "16 accumulation"}, /* fp16's bound may already cover it */
      {SIM_ACC14_P128, {256, 1024, 4096}, NULL},
  };
  static const enum oc_gen gens[] = {OC_GEN_STAGNATION, OC_GEN_ALL_POSITIVE};
  int before = t_fail;
  for (size_t c = 0; c < 3; c++)
    for (int ki = 0; ki < 3; ki++)
      for (size_t gi = 0; gi < 2; gi++)
        for (uint64_t seed = 1; seed <= 3; seed++) {
          struct oc_verdict v = run(cases[c].s, gens[gi], OC_BF16, OC_FP32, 4, 5, cases[c].K[ki],
                                    seed, "bf16_fp32acc:out=fp32");
          int named =
              v.explained_by[0] && (!cases[c].want || strstr(v.explained_by, cases[c].want));
          EXPECT(v.kind == OC_FAIL_PRECISION && named, "%s K=%lld gen=%s seed=%llu: %s (%s)",
                 t_sim_name[cases[c].s], (long long)cases[c].K[ki], oc_gen_name(gens[gi]),
                 (unsigned long long)seed, oc_verdict_name(v.kind), v.explained_by);
          if (seed == 1 && gi == 0 && ki == 1) t_print_verdict(&v);
        }
  t_line("fp16/bf16/14-bit accumulators always fail_precision and are named", before);
}

static void overflow_special(void) {
  int before = t_fail;
  for (uint64_t seed = 1; seed <= 3; seed++) {
    struct oc_verdict v = run(SIM_FP16_ACC, OC_GEN_FP16_OVERFLOW, OC_FP16, OC_FP32, 4, 4, 64, seed,
                              "fp16_fp32acc:out=fp32");
    EXPECT(v.kind == OC_FAIL_SPECIAL, "fp16 acc overflow: %s", oc_verdict_name(v.kind));
    if (seed == 1) t_print_verdict(&v);
    v = run(SIM_FP32_SEQ, OC_GEN_FP16_OVERFLOW, OC_FP16, OC_FP32, 4, 4, 64, seed,
            "fp16_fp32acc:out=fp32");
    EXPECT(!oc_verdict_is_fail(v.kind), "fp32 acc on overflow data: %s", oc_verdict_name(v.kind));
  }
  t_line("fp16 accumulator overflow on in-range result is fail_special", before);
}

/* Large output: sampled path, tiles, screen; one corrupted element. */
static void sampled(void) {
  int before = t_fail;
  int64_t M = 300, N = 260, K = 96;
  void *a = malloc((size_t)(M * K) * 2), *b = malloc((size_t)(K * N) * 2);
  float *o = malloc((size_t)(M * N) * 4);
  struct oc_tensor A, B, O;
  gemm_tensors(&A, &B, &O, OC_GEN_CANCEL, OC_BF16, OC_FP32, M, N, K, 7, a, b, o);
  sim_gemm(SIM_FP32_FMA, &A, &B, &O, o);
  struct oc_profile p;
  oc_profile_parse("bf16_fp32acc:out=fp32", &p);
  struct oc_options opt;
  oc_options_default(&opt);
  opt.fraction = 0.05; /* fewer uniform draws than elements: exercise sampling */
  struct oc_matmul_args ma = {&A, &B, NULL, NULL, 1, 0, OC_ACT_NONE};
  struct oc_verdict v;
  oc_check_matmul(&ma, &O, &p, &opt, &v);
  t_print_verdict(&v);
  EXPECT(!oc_verdict_is_fail(v.kind) && v.checked < v.total && v.screen_vectors == 2 &&
             !v.screen_failed,
         "%s checked %lld", oc_verdict_name(v.kind), (long long)v.checked);
  /* A single corrupted element off every tail, tile-sample and residue: the screen must find it. */
  o[137 * N + 91] += 50.0f; /* beyond every ladder rung's bound */
  oc_check_matmul(&ma, &O, &p, &opt, &v);
  t_print_verdict(&v);
  EXPECT(v.kind == OC_FAIL_VALUE && v.screen_failed && v.index[0] == 137 && v.index[1] == 91,
         "%s at %lld,%lld", oc_verdict_name(v.kind), (long long)v.index[0], (long long)v.index[1]);
  /* NaN hidden in the output where the exact value is finite. */
  o[137 * N + 91] = NAN;
  oc_check_matmul(&ma, &O, &p, &opt, &v);
  EXPECT(v.kind == OC_FAIL_SPECIAL, "%s", oc_verdict_name(v.kind));
  free(a), free(b), free(o);
  t_line("sampled GEMM: screen finds one bad element among 78000; NaN is fail_special", before);
}

/* Epilogue: out = act(alpha AB + beta C + bias), transposed B by strides, batched. */
static void epilogue(void) {
  int before = t_fail;
  enum { BT = 2, M = 5, N = 7, K = 33 };
  static const int acts[] = {OC_ACT_NONE, OC_ACT_RELU,    OC_ACT_GELU_ERF, OC_ACT_GELU_TANH,
                             OC_ACT_SILU, OC_ACT_SIGMOID, OC_ACT_TANH};
  uint16_t a[BT * M * K], bt[BT * N * K], c[BT * M * N], bias[N], o[BT * M * N];
  oc_generate(OC_GEN_CANCEL, OC_BF16, 0, BT * M, K, 3, NULL, a);
  oc_generate(OC_GEN_CANCEL, OC_BF16, 1, BT * N, K, 3, NULL, bt);
  oc_generate(OC_GEN_CANCEL, OC_BF16, 0, BT * M, N, 4, NULL, c);
  oc_generate(OC_GEN_CANCEL, OC_BF16, 0, 1, N, 5, NULL, bias);
  int64_t sa[3] = {BT, M, K}, sb[3] = {BT, K, N}, stb[3] = {N * K, 1, K}, so[3] = {BT, M, N};
  struct oc_tensor A, B, C, Bi, O;
  oc_tensor_make(&A, a, OC_BF16, 3, sa, NULL);
  oc_tensor_make(&B, bt, OC_BF16, 3, sb, stb); /* B stored transposed (N x K per batch) */
  oc_tensor_make(&C, c, OC_BF16, 3, so, NULL);
  oc_tensor_make(&Bi, bias, OC_BF16, 1, (int64_t[]){N}, NULL);
  oc_tensor_make(&O, o, OC_BF16, 3, so, NULL);
  struct oc_profile p;
  oc_profile_preset("bf16_fp32acc", &p);
  struct oc_options opt;
  oc_options_default(&opt);
  for (size_t ai = 0; ai < sizeof acts / sizeof acts[0]; ai++) {
    double alpha = 1.5, beta = -0.5;
    for (int64_t bb = 0; bb < BT; bb++)
      for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
          float acc = 0;
          for (int64_t k = 0; k < K; k++)
            acc = fmaf((float)oc_tensor_at(&A, bb * M * K + i * K + k),
                       (float)oc_tensor_at(&B, bb * N * K + j * K + k), acc);
          float z = (float)alpha * acc +
                    (float)beta * (float)oc_tensor_at(&C, (bb * M + i) * N + j) +
                    (float)oc_tensor_at(&Bi, j);
          float y = (float)oc_act_value(acts[ai], z);
          t_put(o, OC_BF16, (bb * M + i) * N + j, y);
        }
    struct oc_matmul_args ma = {&A, &B, &C, &Bi, alpha, beta, acts[ai]};
    struct oc_verdict v;
    oc_check_matmul(&ma, &O, &p, &opt, &v);
    EXPECT(!oc_verdict_is_fail(v.kind) && v.checked == v.total, "act %zu: %s", ai,
           oc_verdict_name(v.kind));
    if (oc_verdict_is_fail(v.kind)) t_print_verdict(&v);
    /* flip the sign of one output: a value failure */
    uint16_t keep = o[3 * N + 2];
    t_put(o, OC_BF16, 3 * N + 2, oc_tensor_at(&O, 3 * N + 2) + 100);
    oc_check_matmul(&ma, &O, &p, &opt, &v);
    EXPECT(v.kind == OC_FAIL_VALUE && v.index[0] == 0 && v.index[1] == 3 && v.index[2] == 2,
           "act %zu corrupted: %s", ai, oc_verdict_name(v.kind));
    o[3 * N + 2] = keep;
  }
  t_line("batched epilogue alpha/beta/bias/activations pass; a corrupted element is fail_value",
         before);
}

/* Correct rounding of the exact result compares bitwise. */
static void bitwise(void) {
  int before = t_fail;
  enum { M = 6, N = 6, K = 40 };
  uint16_t a[M * K], b[K * N], o[M * N];
  struct oc_tensor A, B, O;
  gemm_tensors(&A, &B, &O, OC_GEN_CANCEL, OC_BF16, OC_BF16, M, N, K, 11, a, b, o);
  struct oc_profile p;
  oc_profile_preset("bf16_fp32acc", &p);
  struct oc_matmul_args ma = {&A, &B, NULL, NULL, 1, 0, OC_ACT_NONE};
  double ref[M * N], bnd[M * N];
  oc_reference_matmul(&ma, O.shape, 2, &p, ref, bnd);
  for (int i = 0; i < M * N; i++)
    t_put(o, OC_BF16, i, ref[i]);
  struct oc_verdict v;
  oc_check_matmul(&ma, &O, &p, NULL, &v);
  EXPECT(v.kind == OC_BITWISE, "%s", oc_verdict_name(v.kind));
  t_line("correctly rounded output is bitwise", before);
}

/* fp32 operands take dot2's path without fma() (every product exact, its
 * remainder +0); the same values stored as fp64 take the fma() path. Both
 * must judge alike, bit for bit: worst element, exact value, bound, ratio,
 * statistical ratio, and a planted error found at the same index. */
static void exact_products_as_fma(void) {
  int before = t_fail;
  enum { M = 40, N = 36, K = 300 };
  static float a[M * K], b[K * N], o[M * N];
  static double ad[M * K], bd[K * N];
  struct oc_tensor A, B, O, AD, BD;
  gemm_tensors(&A, &B, &O, OC_GEN_CANCEL, OC_FP32, OC_FP32, M, N, K, 5, a, b, o);
  sim_gemm(SIM_FP32_PAIRWISE, &A, &B, &O, o);
  o[7 * N + 11] *= 1.001f;
  for (int i = 0; i < M * K; i++)
    ad[i] = a[i];
  for (int i = 0; i < K * N; i++)
    bd[i] = b[i];
  t_tensor2(&AD, ad, OC_FP64, M, K);
  t_tensor2(&BD, bd, OC_FP64, K, N);
  struct oc_profile p;
  oc_profile_preset("fp32", &p);
  struct oc_matmul_args m32 = {&A, &B, NULL, NULL, 1, 0, OC_ACT_NONE};
  struct oc_matmul_args m64 = {&AD, &BD, NULL, NULL, 1, 0, OC_ACT_NONE};
  struct oc_verdict v32, v64;
  EXPECT(!oc_check_matmul(&m32, &O, &p, NULL, &v32) && !oc_check_matmul(&m64, &O, &p, NULL, &v64),
         "check ran");
  EXPECT(v32.kind == v64.kind && v32.kind != OC_PASS && v32.kind != OC_BITWISE, "%s %s",
         oc_verdict_name(v32.kind), oc_verdict_name(v64.kind));
  EXPECT(v32.index[0] == 7 && v32.index[1] == 11 && v64.index[0] == 7 && v64.index[1] == 11,
         "worst at (%lld,%lld) / (%lld,%lld)", (long long)v32.index[0], (long long)v32.index[1],
         (long long)v64.index[0], (long long)v64.index[1]);
  double f32[] = {v32.exact, v32.bound, v32.error, v32.ratio, v32.stat_ratio};
  double f64[] = {v64.exact, v64.bound, v64.error, v64.ratio, v64.stat_ratio};
  EXPECT(!memcmp(f32, f64, sizeof f32) && v32.checked == v64.checked, "exact %a/%a bound %a/%a",
         v32.exact, v64.exact, v32.bound, v64.bound);
  t_line("fp32 operands (products exact, no fma) judged as the fp64 copies (fma)", before);
}

/* A batched fp32 matmul whose A is stored transposed (each batch's A is
 * K x M in memory, read with strides) is judged exactly as the same values
 * stored row-major: the checker keeps a double copy of each batch's A when
 * rows recur (every element checked here: each row N times), and a wrong
 * element in the last batch is found at its index. */
static void transposed_rows(void) {
  int before = t_fail;
  enum { NB = 3, M = 24, N = 20, K = 48 };
  static float at[NB * K * M], ar[NB * M * K], b[NB * K * N], o[NB * M * N];
  uint64_t st = 5;
  for (int i = 0; i < NB * M * K; i++)
    ar[i] = (float)(oc_rand_unit(&st) * 2 - 1);
  for (int i = 0; i < NB * K * N; i++)
    b[i] = (float)(oc_rand_unit(&st) * 2 - 1);
  for (int bb = 0; bb < NB; bb++)
    for (int i = 0; i < M; i++)
      for (int k = 0; k < K; k++)
        at[bb * K * M + k * M + i] = ar[bb * M * K + i * K + k];
  for (int bb = 0; bb < NB; bb++) /* a correct fp32 kernel: sequential sums */
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) {
        float sum = 0;
        for (int k = 0; k < K; k++)
          sum += ar[bb * M * K + i * K + k] * b[bb * K * N + k * N + j];
        o[bb * M * N + i * N + j] = sum;
      }
  struct oc_tensor Ar, At, B, O;
  int64_t sha[3] = {NB, M, K}, sta[3] = {K * M, 1, M}, shb[3] = {NB, K, N}, sho[3] = {NB, M, N};
  oc_tensor_make(&Ar, ar, OC_FP32, 3, sha, NULL);
  oc_tensor_make(&At, at, OC_FP32, 3, sha, sta);
  oc_tensor_make(&B, b, OC_FP32, 3, shb, NULL);
  oc_tensor_make(&O, o, OC_FP32, 3, sho, NULL);
  struct oc_profile p;
  oc_profile_preset("fp32", &p);
  struct oc_options opt;
  oc_options_default(&opt);
  opt.full = 1;
  struct oc_verdict vr, vt;
  for (int wrong = 0; wrong < 2; wrong++) {
    if (wrong) o[2 * M * N + 7 * N + 5] += 100.0f; /* batch 2, row 7, column 5 */
    struct oc_matmul_args mr = {&Ar, &B, NULL, NULL, 1, 0, OC_ACT_NONE};
    struct oc_matmul_args mt = {&At, &B, NULL, NULL, 1, 0, OC_ACT_NONE};
    EXPECT(!oc_check_matmul(&mr, &O, &p, &opt, &vr) && !oc_check_matmul(&mt, &O, &p, &opt, &vt),
           "check failed to run");
    EXPECT(vr.kind == vt.kind && vr.checked == vt.checked && vr.checked == NB * M * N &&
               vr.ratio == vt.ratio && vr.index[0] == vt.index[0] && vr.index[1] == vt.index[1] &&
               vr.index[2] == vt.index[2],
           "transposed A judged differently: %s vs %s", oc_verdict_name(vr.kind),
           oc_verdict_name(vt.kind));
    if (wrong)
      EXPECT(vt.kind == OC_FAIL_VALUE && vt.index[0] == 2 && vt.index[1] == 7 && vt.index[2] == 5,
             "planted error: %s at (%lld,%lld,%lld)", oc_verdict_name(vt.kind),
             (long long)vt.index[0], (long long)vt.index[1], (long long)vt.index[2]);
    else
      EXPECT(!oc_verdict_is_fail(vt.kind), "correct kernel: %s", oc_verdict_name(vt.kind));
  }
  t_line("batched matmul with a transposed A: judged as its row-major copy, the wrong element "
         "found in its batch",
         before);
}

int main(void) {
  exact_products_as_fma();
  transposed_rows();
  bitwise();
  epilogue();
  overflow_special();
  always_fail();
  sampled();
  never_fail();
  return t_done("test_b_matmul");
}
