/* test/oracle/test_b_scan.c — cumsum (oc_check_cumsum): fp32 scans in the
 * associations a GPU scan takes (sequential, blocks of 32 with a carried
 * offset, a Hillis-Steele scan) pass, and so does a bf16 scan that rounds
 * every addition to bf16 (ATen's CUDA scan in scalar_t); a scan that
 * drops each block's carry, one that accumulates fp32 data in fp16 and an
 * exclusive scan fail; Inf and NaN follow IEEE. */
#include "test_b_util.h"

enum { R = 6, N = 700 };

static double rnd_to(enum oc_format f, double v) { return f == OC_FP64 ? v : t_rnd(f, v); }

/* out[k] = prefix k of x under algorithm a, each addition in format f */
static void scan(int a, enum oc_format f, const double *x, double *out) {
  switch (a) {
  case 0:   /* sequential */
  case 4:   /* fp16 accumulation (the bug, on fp32 data) */
  case 5: { /* exclusive (the bug) */
    double s = 0;
    for (int k = 0; k < N; k++) {
      double prev = s;
      s = rnd_to(a == 4 ? OC_FP16 : f, s + x[k]);
      out[k] = a == 5 ? prev : s;
    }
    break;
  }
  case 1:   /* blocks of 32, each scanned, plus the carried block offset */
  case 3: { /* the bug: the carry dropped */
    double carry = 0;
    for (int b = 0; b < N; b += 32) {
      double s = 0;
      for (int k = b; k < b + 32 && k < N; k++) {
        s = rnd_to(f, s + x[k]);
        out[k] = a == 3 ? s : rnd_to(f, carry + s);
      }
      carry = out[(b + 31 < N ? b + 31 : N - 1)];
    }
    break;
  }
  case 2: { /* Hillis-Steele: log2 N rounds of out[k] += out[k - d] */
    static double t[N];
    for (int k = 0; k < N; k++)
      out[k] = x[k];
    for (int d = 1; d < N; d *= 2) {
      for (int k = 0; k < N; k++)
        t[k] = k >= d ? rnd_to(f, out[k] + out[k - d]) : out[k];
      memcpy(out, t, sizeof t);
    }
    break;
  }
  }
}

static struct oc_verdict judge(enum oc_format f, const double *x, const double *o) {
  static unsigned char xb[R * N * 4], ob[R * N * 4];
  for (int i = 0; i < R * N; i++) {
    t_put(xb, f, i, x[i]);
    t_put(ob, f, i, o[i]);
  }
  struct oc_tensor X, O;
  t_tensor2(&X, xb, f, R, N);
  t_tensor2(&O, ob, f, R, N);
  char spec[48];
  snprintf(spec, sizeof spec, "fp32:in=%s:out=%s", oc_format_info(f)->name,
           oc_format_info(f)->name);
  struct oc_profile p;
  oc_profile_parse(spec, &p);
  struct oc_verdict v;
  EXPECT(oc_check_cumsum(&X, 1, &O, &p, NULL, &v) == 0, "rc");
  return v;
}

int main(void) {
  int before = t_fail;
  static double x[R * N], o[R * N];
  uint64_t st = 17;
  static const enum oc_format fs[] = {OC_FP32, OC_BF16};
  for (int fi = 0; fi < 2; fi++)
    for (int a = 0; a < 6; a++) {
      enum oc_format f = fs[fi];
      for (int i = 0; i < R * N; i++)
        x[i] = t_rnd(f, 0.5 + oc_rand_unit(&st) + (i % 3 == 0 ? 1e-3 * oc_rand_unit(&st) : 0));
      for (int r = 0; r < R; r++)
        scan(a, f, x + r * N, o + r * N);
      struct oc_verdict v = judge(f, x, o);
      if (a < 3)
        EXPECT(!oc_verdict_is_fail(v.kind), "%s scan %d: %s", oc_format_info(f)->name, a,
               oc_verdict_name(v.kind));
      else if (f == OC_FP32)
        EXPECT(oc_verdict_is_fail(v.kind), "%s planted scan %d: %s", oc_format_info(f)->name, a,
               oc_verdict_name(v.kind));
    }
  /* Inf, then -Inf: Inf, then NaN */
  for (int i = 0; i < R * N; i++)
    x[i] = 1;
  x[10] = INFINITY, x[20] = -INFINITY;
  for (int r = 0; r < R; r++)
    scan(0, OC_FP32, x + r * N, o + r * N);
  struct oc_verdict v = judge(OC_FP32, x, o);
  EXPECT(v.kind == OC_BITWISE, "Inf then -Inf: %s", oc_verdict_name(v.kind));
  o[25] = 1e30;
  v = judge(OC_FP32, x, o);
  EXPECT(v.kind == OC_FAIL_SPECIAL, "a number after Inf - Inf: %s", oc_verdict_name(v.kind));
  t_line("cumsum: sequential, blocked and Hillis-Steele scans in fp32 and bf16 pass; a dropped "
         "carry, fp16 accumulation and an exclusive scan fail; Inf and NaN follow IEEE",
         before);
  return t_done("test_b_scan");
}
