/* oracle/norm_params.h — the norms' parameter gradients (norm_params.c),
 * called by oc_check_grad for their GRAD rows of ops.def. */
#ifndef OC_NORM_PARAMS_H
#define OC_NORM_PARAMS_H

#include "oracle.h"

/* dweight / dbias over the rows of a->g [M, N] (oracle.h's oc_check_grad
 * describes the inputs); name is the op's, for the verdict. 0, or -1 on
 * bad shapes. */
int oc_check_norm_params(enum oc_grad_op id, const struct oc_grad_args *a,
                         const struct oc_tensor *out, const struct oc_profile *p,
                         const struct oc_options *o, struct oc_verdict *v, const char *name);

#endif
