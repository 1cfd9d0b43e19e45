/* gates/judge_optim.c — kc_judge_optim: an optimizer update's tensors by
 * name and its attrs into oc_check_optim (oracle/optim.h). */
#include "judge_optim.h"

#include <stdio.h>
#include <strings.h>

static const struct oc_tensor *by_name(int n, const struct oc_tensor *in, const char *const *names,
                                       const char *want) {
  for (int i = 0; i < n; i++)
    if (names && names[i] && !strcasecmp(names[i], want)) return &in[i];
  return NULL;
}

int kc_judge_optim(const struct oc_op_info *op, const struct kc_attrs *at, int n,
                   const struct oc_tensor *in, const char *const *names,
                   const struct oc_tensor *out, const struct oc_profile *p,
                   const struct oc_options *o, struct oc_verdict *v, char *err, size_t en) {
  struct oc_optim_args a = {
      .param = by_name(n, in, names, "param"),
      .grad = by_name(n, in, names, "grad"),
      .exp_avg = by_name(n, in, names, "exp_avg"),
      .exp_avg_sq = by_name(n, in, names, "exp_avg_sq"),
      .max_exp_avg_sq = by_name(n, in, names, "max_exp_avg_sq"),
      .momentum_buffer = by_name(n, in, names, "momentum_buffer"),
      .step = by_name(n, in, names, "step"),
      .grad_scale = by_name(n, in, names, "grad_scale"),
      .found_inf = by_name(n, in, names, "found_inf"),
      .step_value = kc_attr_num(at, KC_ATTR_STEP, 1),
      .lr = kc_attr_num(at, KC_ATTR_LR, 1e-3),
      .beta1 = kc_attr_num(at, KC_ATTR_BETA1, 0.9),
      .beta2 = kc_attr_num(at, KC_ATTR_BETA2, 0.999),
      .eps = kc_attr_num(at, KC_ATTR_EPS, 1e-8),
      .weight_decay = kc_attr_num(at, KC_ATTR_WEIGHT_DECAY, 0),
      .momentum = kc_attr_num(at, KC_ATTR_MOMENTUM, 0),
      .dampening = kc_attr_num(at, KC_ATTR_DAMPENING, 0),
      .amsgrad = kc_attr_bool(at, KC_ATTR_AMSGRAD, 0),
      .maximize = kc_attr_bool(at, KC_ATTR_MAXIMIZE, 0),
      .nesterov = kc_attr_bool(at, KC_ATTR_NESTEROV, 0),
      .first_step = kc_attr_bool(at, KC_ATTR_FIRST_STEP, 0),
      .output = (enum oc_optim_out)kc_attr_enum(at, KC_ATTR_OUTPUT, OC_OPTIM_OUT_PARAM),
  };
  if (oc_check_optim((enum oc_optim_op)op->kind, &a, out, p, o, v)) {
    snprintf(err, en,
             "the oracle rejected the %s tensors (param, grad%s by name, of the output's shape; "
             "the output's own state tensor and, for amsgrad, max_exp_avg_sq)",
             op->name, op->kind == OC_OPTIM_SGD ? "[, momentum_buffer]" : ", exp_avg, exp_avg_sq");
    return -1;
  }
  return 0;
}
