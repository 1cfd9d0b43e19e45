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

const char *oc_profile_preset_name(int i) { return i >= 0 && i < NPRESETS ? presets[i].name : NULL; }

static int kv_enum(const char *v, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (!strcmp(v, names[i])) return i;
  return -1;
}

static int set_key(struct oc_profile *p, const char *k, const char *v) {
  static const char *const rnd[] = {"nearest", "zero"};
  static const char *const math[] = {"precise", "fast", "triton"};
  static const char *const sm[] = {"two_pass", "online"};
  static const char *const nm[] = {"two_pass", "welford", "one_pass"};
  static const char *const ovf[] = {"ieee", "saturate"};
  char *end;
  long iv = strtol(v, &end, 10);
  int isint = *v && !*end && iv >= 0 && iv < (1L << 30);
  int e;
  if (!strcmp(k, "in") || !strcmp(k, "acc") || !strcmp(k, "out")) {
    if ((e = oc_format_parse(v)) < 0) return -1;
    *(k[0] == 'i' ? &p->in : k[0] == 'a' ? &p->acc : &p->out) = (enum oc_format)e;
  } else if (!strcmp(k, "round")) {
    if ((e = kv_enum(v, rnd, 2)) < 0) return -1;
    p->acc_round = (enum oc_acc_round)e;
  } else if (!strcmp(k, "math")) {
    if ((e = kv_enum(v, math, 3)) < 0) return -1;
    p->math = (enum oc_math_mode)e;
  } else if (!strcmp(k, "softmax")) {
    if ((e = kv_enum(v, sm, 2)) < 0) return -1;
    p->softmax = (enum oc_softmax_alg)e;
  } else if (!strcmp(k, "norm")) {
    if ((e = kv_enum(v, nm, 3)) < 0) return -1;
    p->norm = (enum oc_norm_alg)e;
  } else if (!strcmp(k, "ovf")) {
    if ((e = kv_enum(v, ovf, 2)) < 0) return -1;
    p->out_ovf = (enum oc_overflow)e;
  } else if (!isint) {
    return -1;
  } else if (!strcmp(k, "acc_bits")) {
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
  } else if (!strcmp(k, "online_block")) {
    p->online_block = (int)iv;
  } else {
    return -1;
  }
  return 0;
}

int oc_profile_parse(const char *spec, struct oc_profile *p) {
  char buf[256];
  if (!spec || strlen(spec) >= sizeof buf) return -1;
  strcpy(buf, spec);
  char *save = NULL, *tok = strtok_r(buf, ":", &save);
  struct oc_profile q;
  if (!tok || oc_profile_preset(tok, &q) < 0) return -1;
  while ((tok = strtok_r(NULL, ":", &save))) {
    char *eq = strchr(tok, '=');
    if (!eq) return -1;
    *eq = 0;
    if (set_key(&q, tok, eq + 1) < 0) return -1;
  }
  if (strlen(spec) < sizeof q.name) snprintf(q.name, sizeof q.name, "%s", spec);
  *p = q;
  return 0;
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
