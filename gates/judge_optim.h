/* gates/judge_optim.h — the optimizer updates (ops.def class OPTIM) from
 * named tensors and typed attrs, for both of the judge's paths (contracts
 * and the PyTorch binding's described tensors). */
#ifndef KC_JUDGE_OPTIM_H
#define KC_JUDGE_OPTIM_H

#include <stddef.h>

#include "attrs.h"
#include "ops.h"
#include "oracle.h"

/* n tensors in[] named names[] (param, grad, exp_avg, exp_avg_sq,
 * max_exp_avg_sq, momentum_buffer, step, grad_scale, found_inf; any
 * order, others ignored) and the attrs lr beta1 beta2 eps weight_decay
 * momentum dampening step amsgrad maximize nesterov first_step output.
 * 0 with v filled; -1 with why in err. */
int kc_judge_optim(const struct oc_op_info *op, const struct kc_attrs *at, int n,
                   const struct oc_tensor *in, const char *const *names,
                   const struct oc_tensor *out, const struct oc_profile *p,
                   const struct oc_options *o, struct oc_verdict *v, char *err, size_t en);

#endif
