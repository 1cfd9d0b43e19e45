/* gates/judge_cnn.h — the judge's dispatch for batch norm and pooling
 * (oracle/cnn.h): their inputs by name, their attrs, for contracts and
 * for the PyTorch binding alike. */
#ifndef KC_JUDGE_CNN_H
#define KC_JUDGE_CNN_H

#include <stddef.h>

#include "attrs.h"
#include "ops.h"
#include "oracle.h"

/* An input by the name the op reads it by (cnn.h's ops: x, g, weight,
 * bias, mean, invstd, running_mean, running_var, indices). */
/* The most inputs an op of these classes reads. */
#define KC_JUDGE_MAX_IN 8

struct kc_named_tensor {
  const char *name;
  const struct oc_tensor *t;
};

/* The verdict on out of batch-norm or pool op `op` (ops.def classes
 * BATCH_NORM, POOL) over the n named inputs in (matched by name,
 * case-insensitive; x may also be the first input), with attrs at. 0
 * with v filled; -1 with why in err. */
int kc_judge_cnn(const struct oc_op_info *op, const struct kc_attrs *at,
                 const struct kc_named_tensor *in, int n, const struct oc_tensor *out,
                 const struct oc_profile *p, const struct oc_options *o, struct oc_verdict *v,
                 char *err, size_t errn);

#endif
