/* oracle/optim.h — the optimizer updates and the norms' parameter
 * gradients (ops.def classes OPTIM and GRAD): part of the oracle's public
 * API, included by oracle.h. */
#ifndef OC_OPTIM_H
#define OC_OPTIM_H

/* One output of an optimizer step (ops.def class OPTIM; optim.c gives the
 * formulas and the bound), judged against the exact update of the values
 * before the step:
 *   g~ = -(g / grad_scale) if maximize, else g / grad_scale
 *   adam:  g~ += wd p                      adamw: p1 = p - lr wd p
 *   exp_avg'    = beta1 m + (1 - beta1) g~
 *   exp_avg_sq' = beta2 v + (1 - beta2) g~^2
 *   max'        = max(max_exp_avg_sq, exp_avg_sq')         (amsgrad)
 *   param'      = p1 - (lr / bc1) exp_avg' / (sqrt(V) / sqrt(bc2) + eps),
 *                 V = max' (amsgrad) or exp_avg_sq', bc_k = 1 - beta_k^step
 *   sgd: g~ += wd p; buf' = g~ (first step) or momentum buf + (1 -
 *        dampening) g~; d = g~ + momentum buf' (nesterov) or buf';
 *        param' = p - lr d
 * A found_inf holding a nonzero value: every output keeps its old value
 * bit for bit (the fused kernels skip the step). The tensors have out's
 * rank, each dim equal to out's or 1; step, grad_scale and found_inf are
 * read at their first element (NULL: step_value, no scaling, no check). */
enum oc_optim_op {
#define OC_OPDEF(id, name, arity, cls) OC_OP_IF_OPTIM(cls, OC_OPTIM_##id, )
#include "ops.def"
  OC_OPTIM_COUNT
};
/* The judged output; the attr output's words in this order (attrs.def). */
enum oc_optim_out {
  OC_OPTIM_OUT_PARAM,
  OC_OPTIM_OUT_EXP_AVG,
  OC_OPTIM_OUT_EXP_AVG_SQ,
  OC_OPTIM_OUT_MAX_EXP_AVG_SQ,
  OC_OPTIM_OUT_MOMENTUM_BUFFER,
};
struct oc_optim_args {
  const struct oc_tensor *param, *grad, *exp_avg, *exp_avg_sq, *max_exp_avg_sq, *momentum_buffer;
  const struct oc_tensor *step, *grad_scale, *found_inf;
  double step_value; /* the step count when step is NULL */
  double lr, beta1, beta2, eps, weight_decay, momentum, dampening;
  int amsgrad, maximize, nesterov, first_step;
  enum oc_optim_out output;
};
int oc_check_optim(enum oc_optim_op op, const struct oc_optim_args *a, const struct oc_tensor *out,
                   const struct oc_profile *p, const struct oc_options *o, struct oc_verdict *v);

#endif
