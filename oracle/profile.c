/* oracle/profile.c — named precision profiles, "preset:key=value" parsing,
 * and the ladder of cheaper accumulation profiles used to explain a
 * precision failure ("consistent with fp16 accumulation"). */
#include "profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"

struct preset {
  const char *name;
  enum oc_format in, acc, out;
  int acc_bits;
  enum oc_acc_round rnd;
  int block, promote, tf32;
};

/* Tensor-core presets use alignment blocks of 4 terms: the smallest block
 * reported by Fasi, Higham, Mikaitis and Pranesh (2021), hence the largest
 * rounding count K + ceil(K/b) and the most conservative bound. */
static const struct preset presets[] = {
    {"fp64", OC_FP64, OC_FP64, OC_FP64, 0, OC_ACC_NEAREST, 0, 0, 0},
    {"fp32", OC_FP32, OC_FP32, OC_FP32, 0, OC_ACC_NEAREST, 0, 0, 0},
    {"tf32", OC_FP32, OC_FP32, OC_FP32, 0, OC_ACC_NEAREST, 0, 0, 1},
    {"bf16", OC_BF16, OC_FP32, OC_BF16, 0, OC_ACC_NEAREST, 0, 0, 0},
    {"bf16_fp32acc", OC_BF16, OC_FP32, OC_BF16, 0, OC_ACC_NEAREST, 0, 0, 0},
    {"fp16", OC_FP16, OC_FP32, OC_FP16, 0, OC_ACC_NEAREST, 0, 0, 0},
    {"fp16_fp32acc", OC_FP16, OC_FP32, OC_FP16, 0, OC_ACC_NEAREST, 0, 0, 0},
    {"fp16_fp16acc", OC_FP16, OC_FP16, OC_FP16, 0, OC_ACC_NEAREST, 0, 0, 0},
    {"bf16_bf16acc", OC_BF16, OC_BF16, OC_BF16, 0, OC_ACC_NEAREST, 0, 0, 0},
    {"fp16_tile32", OC_FP16, OC_FP16, OC_FP16, 0, OC_ACC_NEAREST, 0, 32, 0},
    {"tensorcore_fp32", OC_BF16, OC_FP32, OC_FP32, 0, OC_ACC_ZERO, 4, 0, 0},
    {"tensorcore_fp16", OC_FP16, OC_FP32, OC_FP16, 0, OC_ACC_ZERO, 4, 0, 0},
    {"tensorcore_tf32", OC_FP32, OC_FP32, OC_FP32, 0, OC_ACC_ZERO, 4, 0, 1},
    {"fp8_fp32acc", OC_E4M3FN, OC_FP32, OC_BF16, 0, OC_ACC_NEAREST, 0, 0, 0},
    {"fp8_wgmma_14bit", OC_E4M3FN, OC_FP32, OC_BF16, 14, OC_ACC_ZERO, 0, 128, 0},
};
#define NPRESETS ((int)(sizeof presets / sizeof presets[0]))

static void fill(struct oc_profile *p, const struct preset *s) {
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "%s", s->name);
  p->in = s->in;
  p->acc = s->acc;
  p->out = s->out;
  p->acc_bits = s->acc_bits;
  p->acc_round = s->rnd;
  p->block = s->block;
  p->promote = s->promote;
  p->tf32 = s->tf32;
  p->fma = 1;
  p->math = OC_MATH_PRECISE;
  p->softmax = OC_SOFTMAX_TWO_PASS;
  p->norm = OC_NORM_TWO_PASS;
  p->out_ovf = OC_OVF_IEEE;
}

int oc_profile_preset(const char *name, struct oc_profile *p) {
  for (int i = 0; i < NPRESETS; i++)
    if (!strcmp(name, presets[i].name)) {
      fill(p, &presets[i]);
      return 0;
    }
  return -1;
}

const char *oc_profile_preset_name(int i) {
  return i >= 0 && i < NPRESETS ? presets[i].name : NULL;
}

static int kv_enum(const char *v, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (!strcmp(v, names[i])) return i;
  return -1;
}

static const char *const rnd_names[] = {"nearest", "zero"};
static const char *const math_names[] = {"precise", "fast", "triton"};
static const char *const sm_names[] = {"two_pass", "online"};
static const char *const nm_names[] = {"two_pass", "welford", "one_pass"};
static const char *const ovf_names[] = {"ieee", "saturate"};
static const char *const mr_names[] = {"nan", "zero"};

/* 0 ok, -1 unknown key, -2 bad value (*expect says what was wanted). */
static int set_key(struct oc_profile *p, const char *k, const char *v, const char **expect) {
  char *end;
  long iv = strtol(v, &end, 10);
  int isint = *v && !*end && iv >= 0 && iv < (1L << 30);
  int e;
  if (!strcmp(k, "in") || !strcmp(k, "acc") || !strcmp(k, "out")) {
    *expect = "a format: fp64 fp32 tf32 fp16 bf16 e4m3fn e5m2";
    if ((e = oc_format_parse(v)) < 0) return -2;
    *(k[0] == 'i' ? &p->in : k[0] == 'a' ? &p->acc : &p->out) = (enum oc_format)e;
  } else if (!strcmp(k, "round")) {
    *expect = "nearest or zero";
    if ((e = kv_enum(v, rnd_names, 2)) < 0) return -2;
    p->acc_round = (enum oc_acc_round)e;
  } else if (!strcmp(k, "math")) {
    *expect = "precise, fast or triton";
    if ((e = kv_enum(v, math_names, 3)) < 0) return -2;
    p->math = (enum oc_math_mode)e;
  } else if (!strcmp(k, "softmax")) {
    *expect = "two_pass or online";
    if ((e = kv_enum(v, sm_names, 2)) < 0) return -2;
    p->softmax = (enum oc_softmax_alg)e;
  } else if (!strcmp(k, "partial")) {
    *expect = "none or a format name";
    if (!strcmp(v, "none")) {
      p->partial = 0;
    } else {
      if ((e = oc_format_parse(v)) < 0) return -2;
      p->partial = 1;
      p->partial_fmt = (enum oc_format)e;
    }
  } else if (!strcmp(k, "norm")) {
    *expect = "two_pass, welford or one_pass";
    if ((e = kv_enum(v, nm_names, 3)) < 0) return -2;
    p->norm = (enum oc_norm_alg)e;
  } else if (!strcmp(k, "ovf")) {
    *expect = "ieee or saturate";
    if ((e = kv_enum(v, ovf_names, 2)) < 0) return -2;
    p->out_ovf = (enum oc_overflow)e;
  } else if (!strcmp(k, "masked_row")) {
    *expect = "nan or zero";
    if ((e = kv_enum(v, mr_names, 2)) < 0) return -2;
    p->masked_row = (enum oc_masked_row)e;
  } else if (strcmp(k, "acc_bits") && strcmp(k, "block") && strcmp(k, "promote") &&
             strcmp(k, "fma") && strcmp(k, "tf32") && strcmp(k, "ftz") &&
             strcmp(k, "online_block")) {
    return -1;
  } else if (!isint) {
    *expect = "a nonnegative integer";
    return -2;
  } else if (!strcmp(k, "acc_bits")) {
    *expect = "0 (the accumulator's own) or 2..53 bits";
    if (iv == 1 || iv > 53) return -2;
    p->acc_bits = (int)iv;
  } else if (!strcmp(k, "block")) {
    p->block = (int)iv;
  } else if (!strcmp(k, "promote")) {
    p->promote = (int)iv;
  } else if (!strcmp(k, "fma")) {
    p->fma = iv != 0;
  } else if (!strcmp(k, "tf32")) {
    p->tf32 = iv != 0;
  } else if (!strcmp(k, "ftz")) {
    p->ftz = iv != 0;
  } else {
    p->online_block = (int)iv;
  }
  return 0;
}

#define ERR(...) (err && n ? (void)snprintf(err, n, __VA_ARGS__) : (void)0)

int oc_profile_parse_err(const char *spec, struct oc_profile *p, char *err, size_t n) {
  char buf[256];
  if (!spec || !p) {
    ERR("no profile given");
    return -1;
  }
  if (strlen(spec) >= sizeof buf) {
    ERR("profile spec longer than %zu characters", sizeof buf - 1);
    return -1;
  }
  strcpy(buf, spec);
  char *save = NULL, *tok = strtok_r(buf, ":", &save);
  struct oc_profile q;
  if (!tok || oc_profile_preset(tok, &q) < 0) {
    char known[320] = "";
    size_t at = 0;
    for (int i = 0; i < NPRESETS && at < sizeof known; i++)
      at += (size_t)snprintf(known + at, sizeof known - at, "%s%s", i ? " " : "", presets[i].name);
    ERR("unknown preset '%s' (known: %s)", tok ? tok : "", known);
    return -1;
  }
  while ((tok = strtok_r(NULL, ":", &save))) {
    char *eq = strchr(tok, '=');
    if (!eq) {
      ERR("'%s' is not key=value", tok);
      return -1;
    }
    *eq = 0;
    const char *expect = "";
    int r = set_key(&q, tok, eq + 1, &expect);
    if (r == -1) {
      ERR("unknown key '%s' (keys: in acc out acc_bits round block promote fma tf32 ftz math "
          "softmax online_block norm ovf masked_row partial)",
          tok);
      return -1;
    }
    if (r == -2) {
      ERR("bad value '%s' for key '%s' (expected %s)", eq + 1, tok, expect);
      return -1;
    }
  }
  if (strlen(spec) < sizeof q.name) snprintf(q.name, sizeof q.name, "%s", spec);
  *p = q;
  if (err && n) err[0] = 0;
  return 0;
}

int oc_profile_parse(const char *spec, struct oc_profile *p) {
  return oc_profile_parse_err(spec, p, NULL, 0);
}

int oc_profile_spec(const struct oc_profile *p, char *buf, size_t n) {
  return snprintf(buf, n,
                  "fp64:in=%s:acc=%s:out=%s:acc_bits=%d:round=%s:block=%d:promote=%d:fma=%d:"
                  "tf32=%d:ftz=%d:math=%s:softmax=%s:online_block=%d:norm=%s:ovf=%s:masked_row=%s:"
                  "partial=%s",
                  oc_format_info(p->in)->name, oc_format_info(p->acc)->name,
                  oc_format_info(p->out)->name, p->acc_bits, rnd_names[p->acc_round], p->block,
                  p->promote, p->fma, p->tf32, p->ftz, math_names[p->math], sm_names[p->softmax],
                  p->online_block, nm_names[p->norm], ovf_names[p->out_ovf],
                  mr_names[p->masked_row],
                  p->partial ? oc_format_info(p->partial_fmt)->name : "none");
}

int oc_profile_acc_bits(const struct oc_profile *p) {
  return p->acc_bits > 0 ? p->acc_bits : oc_format_info(p->acc)->p;
}

double oc_profile_u_acc(const struct oc_profile *p) {
  int b = oc_profile_acc_bits(p);
  return ldexp(1.0, p->acc_round == OC_ACC_ZERO ? 1 - b : -b);
}

int oc_profile_describe(const struct oc_profile *p, char *buf, int n) {
  static const char *const math[] = {"precise", "fast-math", "triton"};
  return snprintf(buf, (size_t)n, "%s in%s, %s accumulate (%d bits, %s%s%s), %s out, %s math%s",
                  oc_format_info(p->in)->name, p->tf32 ? " as tf32" : "",
                  oc_format_info(p->acc)->name, oc_profile_acc_bits(p),
                  p->acc_round == OC_ACC_ZERO ? "toward zero" : "nearest",
                  p->block ? ", aligned blocks" : "", p->promote ? ", promoted" : "",
                  oc_format_info(p->out)->name, math[p->math], p->ftz ? ", ftz" : "");
}

/* Rungs from least to most degraded accumulation. A rung is kept only when
 * its dot bound is looser than the declared one (at K = 1024), so a rung
 * can only widen what the declared profile allows. */
int oc_profile_ladder(const struct oc_profile *p, struct oc_profile *rungs, int max) {
  struct rung {
    const char *name;
    enum oc_format acc;
    int bits;
    enum oc_acc_round rnd;
    int block, promote, tf32;
  } const all[] = {
      {"fp32 accumulation toward zero (tensor core)", OC_FP32, 0, OC_ACC_ZERO, 4, 0, 0},
      {"tf32 operands", OC_FP32, 0, OC_ACC_ZERO, 4, 0, 1},
      {"fp16 accumulation within 32-tiles", OC_FP16, 0, OC_ACC_NEAREST, 0, 32, 0},
      {"14-bit accumulation promoted every 128", OC_FP32, 14, OC_ACC_ZERO, 0, 128, 0},
      {"fp16 accumulation", OC_FP16, 0, OC_ACC_NEAREST, 0, 0, 0},
      {"bf16 accumulation", OC_BF16, 0, OC_ACC_NEAREST, 0, 0, 0},
  };
  int n = 0;
  double mine = oc_dot_theta(p, 1024, 0);
  for (size_t i = 0; i < sizeof all / sizeof all[0] && n < max; i++) {
    struct oc_profile r = *p;
    snprintf(r.name, sizeof r.name, "%s", all[i].name);
    r.acc = all[i].acc;
    r.acc_bits = all[i].bits;
    r.acc_round = all[i].rnd;
    r.block = all[i].block;
    r.promote = all[i].promote;
    r.tf32 = p->tf32 || (all[i].tf32 && (p->in == OC_FP32 || p->in == OC_FP64));
    if (all[i].tf32 && !r.tf32) continue;
    if (!(oc_dot_theta(&r, 1024, 0) > mine)) continue;
    rungs[n++] = r;
  }
  return n;
}
