/* oracle/cnn.h — the ops of a convolutional network's other layers: batch
 * norm over the channel axis (batch_norm.c) and 2-D pooling (pool.c),
 * forward and backward, each an ops.def row (classes BATCH_NORM, POOL). */
#ifndef OC_CNN_H
#define OC_CNN_H

#include "formats.h"
#include "ops.h"

struct oc_tensor;
struct oc_options;
struct oc_verdict;
struct oc_profile;

/* Batch norm over x [N, C, *] (channel axis 1; the statistics of channel
 * c over N and every further dim, M elements). The ops (ops.def), each
 * checked in full against its exact value with a bound that holds for the
 * evaluations ATen and cuDNN may choose (batch_norm.c derives them):
 *  batch_norm              y = (x - mean) invstd w + b, batch statistics
 *  batch_norm_mean         the saved mean [C]
 *  batch_norm_invstd       the saved 1 / sqrt(var + eps) [C] (biased var)
 *  batch_norm_running_mean (1 - momentum) running_mean + momentum mean [C]
 *  batch_norm_running_var  (1 - momentum) running_var + momentum var M / (M - 1) [C]
 *  batch_norm_eval         y from running_mean and running_var (inference)
 *  batch_norm_backward     dx = w invstd (g - mean(g) - xh mean(g xh)),
 *                          xh = (x - mean) invstd, from the saved mean, invstd
 *  batch_norm_backward_weight  sum over the channel of g xh [C] (eval:
 *                          invstd from running_var, mean = running_mean)
 *  batch_norm_backward_bias    sum over the channel of g [C]
 *  batch_norm_eval_backward    dx = g w / sqrt(running_var + eps)
 * weight and bias [C] or NULL (1 and 0). */
struct oc_batch_norm_args {
  const struct oc_tensor *x;             /* the forward input */
  const struct oc_tensor *g;             /* backward: the incoming gradient, x's shape */
  const struct oc_tensor *weight, *bias; /* [C] or NULL */
  const struct oc_tensor *mean, *invstd; /* backward: the forward's saved statistics [C] */
  const struct oc_tensor *running_mean;  /* eval; running_mean: the value before the update */
  const struct oc_tensor *running_var;   /* eval; running_var: the value before the update */
  double eps, momentum;
  /* the format the kernel holds mean and invstd in between the statistics
   * and y (ATen's CPU kernels with a 16-bit weight or none: its type);
   * OC_FP32 or wider: the compute format */
  enum oc_format stat_fmt;
};
int oc_check_batch_norm(enum oc_opid op, const struct oc_batch_norm_args *a,
                        const struct oc_tensor *out, const struct oc_profile *p,
                        const struct oc_options *o, struct oc_verdict *v);

/* 2-D pooling over the last two dims of x [..., H, W] (out [..., OH, OW];
 * backward: g [..., OH, OW], out x's shape). Windows as ATen takes them:
 * max and avg pool start at o s - pad, max pool's taps are dilation apart
 * and clipped to the input, avg pool's span kernel (clipped to [-pad, H +
 * pad) for count_include_pad's divisor, to the input for the sum);
 * adaptive pools [floor(o H / OH), ceil((o + 1) H / OH)). The ops:
 *  max_pool2d, adaptive_max_pool2d          the window's max, bit for bit
 *  max_pool2d_indices, adaptive_max_pool2d_indices   its position h W + w
 *                                           (any position holding the max)
 *  max_pool2d_backward  g scattered to the positions in indices (both
 *                       max pools' backward), summed where they repeat
 *  avg_pool2d, adaptive_avg_pool2d          the window's sum / divisor
 *  avg_pool2d_backward, adaptive_avg_pool2d_backward  each input's sum of
 *                       g / divisor over the windows holding it
 * Sums carry the bound of any order (pool.c). */
struct oc_pool_args {
  const struct oc_tensor *x;       /* forward: the input; backward: the forward input (shape) */
  const struct oc_tensor *g;       /* backward: the gradient of the output */
  const struct oc_tensor *indices; /* max_pool2d_backward: the forward's indices, g's shape */
  int kernel[2], stride[2], pad[2], dilation[2];
  int count_include_pad; /* avg_pool2d: the divisor counts the padding */
  int64_t divisor;       /* avg_pool2d: divisor_override (negative too), 0 for none */
};
int oc_check_pool(enum oc_opid op, const struct oc_pool_args *a, const struct oc_tensor *out,
                  const struct oc_profile *p, const struct oc_options *o, struct oc_verdict *v);

#endif
