/* oracle/profile.h — precision profiles: what arithmetic a kernel declares
 * (formats, accumulation rounding, math mode, algorithm class), plus named
 * presets so callers can say one word ("bf16_fp32acc"). The bounds in
 * bounds.c are functions of a profile and the data, nothing else. */
#ifndef OC_PROFILE_H
#define OC_PROFILE_H

#include <stddef.h>

#include "formats.h"

enum oc_acc_round {
  OC_ACC_NEAREST, /* round to nearest even after every addition */
  OC_ACC_ZERO,    /* toward zero: tensor-core alignment truncation */
};

enum oc_math_mode {
  OC_MATH_PRECISE, /* CUDA defaults: -prec-div=true -prec-sqrt=true, expf 2 ulp */
  OC_MATH_FAST,    /* --use_fast_math: __expf, __fdividef, __logf, tanh.approx */
  OC_MATH_TRITON,  /* Triton on NVIDIA: ex2.approx exp, div.full.f32 (2 ulp) */
};

enum oc_softmax_alg { OC_SOFTMAX_TWO_PASS, OC_SOFTMAX_ONLINE };
enum oc_norm_alg { OC_NORM_TWO_PASS, OC_NORM_WELFORD, OC_NORM_ONE_PASS };
/* softmax/log_softmax of a row whose every logit is -Inf: NaN (PyTorch,
 * exp(-Inf - -Inf)) or 0 / -Inf (flash-attention kernels, which skip the
 * empty row and leave the accumulator at zero). */
enum oc_masked_row { OC_MASKED_NAN, OC_MASKED_ZERO };

#define OC_PROFILE_NAME_MAX 96

struct oc_profile {
  char name[OC_PROFILE_NAME_MAX];
  enum oc_format in;  /* operand format (what the kernel reads) */
  enum oc_format acc; /* accumulator format */
  enum oc_format out; /* output format */
  int acc_bits;       /* accumulator significand bits when narrower than acc
                         (14 for Hopper FP8 WGMMA); 0: those of acc */
  enum oc_acc_round acc_round;
  int block;   /* tensor-core alignment block b: K + ceil(K/b) roundings; 0: plain */
  int promote; /* accumulate `promote` terms in the narrow accumulator, then add
                  into an fp32 one (FP8 WGMMA promotion, split tiles); 0: never */
  int fma;     /* FMA allowed (changes no worst-case bound; kept for the record) */
  int tf32;    /* fp32 operands rounded to tf32 before multiplying */
  int ftz;     /* subnormal inputs and results may be flushed to zero */
  /* partial: a reduction's partial sums may be rounded to partial_fmt at
   * every level of its tree (profile key partial=<format>; ATen's CUDA
   * batch-norm backward passes its Float2 partials through the input
   * type); 0: they stay in acc */
  int partial;
  enum oc_format partial_fmt;
  enum oc_math_mode math;
  enum oc_softmax_alg softmax;
  int online_block; /* online softmax/attention: keys per rescale (0: 1, worst case) */
  enum oc_norm_alg norm;
  enum oc_overflow out_ovf;      /* overflow rule of the output conversion */
  enum oc_masked_row masked_row; /* all -Inf softmax rows (default NaN, PyTorch) */
};

/* Presets: "fp64", "fp32", "tf32", "bf16" (= bf16_fp32acc), "bf16_fp32acc",
 * "fp16_fp32acc", "fp16_fp16acc", "bf16_bf16acc", "tensorcore_fp32",
 * "tensorcore_fp16", "fp8_wgmma_14bit", "fp8_fp32acc", "fp16_tile32". Returns 0 on success,
 * -1 for an unknown name (p untouched). */
int oc_profile_preset(const char *name, struct oc_profile *p);
/* Name of the i-th preset, NULL past the end (for listings and help). */
const char *oc_profile_preset_name(int i);
/* Parses "preset[:key=value...]", e.g. "fp32:math=fast:softmax=online:ftz=1".
 * Keys: in, acc, out, acc_bits, round(nearest|zero), block, promote, fma, tf32,
 * ftz, math(precise|fast|triton), softmax(two_pass|online), online_block,
 * norm(two_pass|welford|one_pass), ovf(ieee|saturate), masked_row(nan|zero).
 * -1 on any error. */
int oc_profile_parse(const char *spec, struct oc_profile *p);
/* As oc_profile_parse, and on error writes why to err (n bytes, may be NULL):
 * "unknown preset 'x' (known: fp64, fp32, ...)", "unknown key 'k'",
 * "bad value 'v' for key 'k' (expected ...)", "'tok' is not key=value". */
int oc_profile_parse_err(const char *spec, struct oc_profile *p, char *err, size_t n);
/* Canonical spec that parses back to the same settings: the fp64 preset
 * followed by every key ("fp64:in=bf16:acc=fp32:...:ovf=ieee"). Returns what
 * snprintf returns. */
int oc_profile_spec(const struct oc_profile *p, char *buf, size_t n);
/* One-line human description ("bf16 in, fp32 accumulate (nearest), bf16 out"). */
int oc_profile_describe(const struct oc_profile *p, char *buf, int n);

/* Derived quantities used by the bounds. */
int oc_profile_acc_bits(const struct oc_profile *p);
/* Unit roundoff of one accumulation step: 2^-p for nearest, 2^(1-p) toward zero. */
double oc_profile_u_acc(const struct oc_profile *p);

/* The ladder of cheaper accumulation profiles tried, in order, to explain a
 * precision failure. Returns how many were written (at most max). Each rung
 * keeps p's formats for input/output and changes only the accumulation. */
int oc_profile_ladder(const struct oc_profile *p, struct oc_profile *rungs, int max);

#endif
