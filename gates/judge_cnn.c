/* gates/judge_cnn.c — batch norm and pooling handed to the oracle
 * (oracle/cnn.h): the inputs by their names, the window and statistics
 * attrs typed (contract/attrs.def). */
#include "judge_cnn.h"

#include <stdio.h>
#include <strings.h>

#include "cnn.h"

static const struct oc_tensor *by_name(const struct kc_named_tensor *in, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (in[i].name && !strcasecmp(in[i].name, name)) return in[i].t;
  return NULL;
}

static int batch_norm(const struct oc_op_info *op, const struct kc_attrs *at,
                      const struct kc_named_tensor *in, int n, const struct oc_tensor *out,
                      const struct oc_profile *p, const struct oc_options *o, struct oc_verdict *v,
                      char *err, size_t errn) {
  struct oc_batch_norm_args a = {by_name(in, n, "x"),
                                 by_name(in, n, "g"),
                                 by_name(in, n, "weight"),
                                 by_name(in, n, "bias"),
                                 by_name(in, n, "mean"),
                                 by_name(in, n, "invstd"),
                                 by_name(in, n, "running_mean"),
                                 by_name(in, n, "running_var"),
                                 kc_attr_num(at, KC_ATTR_EPS, 1e-5),
                                 kc_attr_num(at, KC_ATTR_MOMENTUM, 0.1),
                                 (enum oc_format)kc_attr_enum(at, KC_ATTR_STAT_FORMAT, OC_FP32)};
  if (!a.x && n > 0 && op->id != OC_ID_BATCH_NORM_BACKWARD &&
      op->id != OC_ID_BATCH_NORM_BACKWARD_WEIGHT && op->id != OC_ID_BATCH_NORM_BACKWARD_BIAS)
    a.x = in[0].t;
  if (oc_check_batch_norm(op->id, &a, out, p, o, v)) {
    snprintf(err, errn,
             "the oracle rejected the %s tensors (x [N, C, *]; g of x's shape; weight, bias, "
             "statistics [C]; by name)",
             op->name);
    return -1;
  }
  return 0;
}

static int pool(const struct oc_op_info *op, const struct kc_attrs *at,
                const struct kc_named_tensor *in, int n, const struct oc_tensor *out,
                const struct oc_profile *p, const struct oc_options *o, struct oc_verdict *v,
                char *err, size_t errn) {
  struct oc_pool_args a = {by_name(in, n, "x"),
                           by_name(in, n, "g"),
                           by_name(in, n, "indices"),
                           {0, 0},
                           {0, 0},
                           {0, 0},
                           {1, 1},
                           0,
                           0};
  if (!a.x && n > 0 && !a.g) a.x = in[0].t;
  static const enum kc_attr_id ids[4][2] = {{KC_ATTR_KERNEL_H, KC_ATTR_KERNEL_W},
                                            {KC_ATTR_STRIDE_H, KC_ATTR_STRIDE_W},
                                            {KC_ATTR_PAD_H, KC_ATTR_PAD_W},
                                            {KC_ATTR_DILATION_H, KC_ATTR_DILATION_W}};
  int *dst[4] = {a.kernel, a.stride, a.pad, a.dilation};
  for (int k = 0; k < 4; k++)
    for (int d = 0; d < 2; d++) /* stride defaults to the kernel (ATen's stride=[]) */
      dst[k][d] = (int)kc_attr_num(at, ids[k][d], k == 1 ? dst[0][d] : k == 3 ? 1 : 0);
  a.count_include_pad = kc_attr_bool(at, KC_ATTR_COUNT_INCLUDE_PAD, 1);
  a.divisor = (int64_t)kc_attr_num(at, KC_ATTR_DIVISOR_OVERRIDE, 0);
  if (oc_check_pool(op->id, &a, out, p, o, v)) {
    snprintf(err, errn,
             "the oracle rejected the %s tensors or window (x [.., H, W]; g, indices [.., OH, "
             "OW]; kernel, stride >= 1)",
             op->name);
    return -1;
  }
  return 0;
}

int kc_judge_cnn(const struct oc_op_info *op, const struct kc_attrs *at,
                 const struct kc_named_tensor *in, int n, const struct oc_tensor *out,
                 const struct oc_profile *p, const struct oc_options *o, struct oc_verdict *v,
                 char *err, size_t errn) {
  if (op->cls == OC_CLASS_BATCH_NORM) return batch_norm(op, at, in, n, out, p, o, v, err, errn);
  if (op->cls == OC_CLASS_POOL) return pool(op, at, in, n, out, p, o, v, err, errn);
  snprintf(err, errn, "op '%s' is neither batch norm nor pooling", op->name);
  return -1;
}
