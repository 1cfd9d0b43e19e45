/* oracle/conv.h — convolution forward and gradients over 1 to 3 spatial
 * dims (conv.c gives the bound): every output element is an exact dot
 * product, judged with the matmul's bound for any summation order. */
#ifndef OC_CONV_H
#define OC_CONV_H

#include "oracle.h"

#define OC_CONV_MAX_SP 3

/* The CONV rows of ops.def: conv, conv_transpose (conv's gradient with
 * respect to its input), conv_weight_grad, conv_bias_grad. */
enum oc_conv_op {
#define OC_OPDEF(id, name, arity, cls) OC_OP_IF_CONV(cls, OC_CONV_OP_##id, )
#include "ops.def"
  OC_CONV_OP_COUNT
};

/* The algorithm the result may come from (attr algorithm): DIRECT, a sum
 * of the products in any order (im2col and GEMM, implicit GEMM, direct
 * loops); ANY, also transform algorithms (Winograd, FFT: cuDNN may pick
 * them), whose error is not a dot product's: an element beyond the
 * dot-product bound is then inconclusive, never a failure. */
enum oc_conv_alg { OC_CONV_DIRECT, OC_CONV_ANY };

/* Tensors by op (N batch, C input channels, O output channels, G groups,
 * * the spatial dims, k the kernel's):
 *   conv:             a = x [N, C, *], b = w [O, C/G, *k], bias [O] or NULL -> [N, O, *]
 *   conv_transpose:   a = x [N, C, *], b = w [C, O/G, *k], bias [O] or NULL -> [N, O, *]
 *                     (the gradient of conv(., w) at x; output_padding
 *                     lets the output be up to max(stride, dilation) - 1
 *                     longer per dim than the positions the input reaches)
 *   conv_weight_grad: a = g [N, O, *], b = x [N, C, *] -> [O, C/G, *k]
 *   conv_bias_grad:   a = g [N, O, *] -> [O]
 * stride, padding, dilation per spatial dim. */
struct oc_conv_args {
  const struct oc_tensor *a, *b, *bias;
  int64_t stride[OC_CONV_MAX_SP], padding[OC_CONV_MAX_SP], dilation[OC_CONV_MAX_SP];
  int64_t groups;
  enum oc_conv_alg alg;
};
/* 0 with v filled; -1 for shapes that do not fit the op. Sampled as the
 * matmul's (ORACLE.md §4) unless o->full or the output is small; the
 * sampled fraction is raised where a full sample would sum more than about
 * 1.3e8 terms (a long weight gradient), which v->fraction records. */
int oc_check_conv(enum oc_conv_op op, const struct oc_conv_args *args, const struct oc_tensor *out,
                  const struct oc_profile *p, const struct oc_options *o, struct oc_verdict *v);

#endif
