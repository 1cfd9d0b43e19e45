/* oracle/attention_grad.h — attention's backward (dq, dk, dv of
 * O = softmax(Q.K^T scale [+ causal mask]) . V), one output per check.
 * Included by oracle.h (it uses struct oc_tensor, oc_options, oc_verdict). */
#ifndef OC_ATTENTION_GRAD_H
#define OC_ATTENTION_GRAD_H

/* The output judged (contract attr `which`: q k v, in this order). */
enum oc_attn_grad_which { OC_ATTN_DQ, OC_ATTN_DK, OC_ATTN_DV };

/* q [.., Sq, D], k [.., Sk, D], v [.., Sk, Dv]; o (the forward's output)
 * and g (the incoming gradient dO) [.., Sq, Dv]; lse [.., Sq], the
 * forward's logsumexp of the scaled scores (natural log), which the fused
 * kernels recompute P from (required). out: dq [.., Sq, D], dk [.., Sk,
 * D] or dv [.., Sk, Dv]; the leading dims are out's (every input's align
 * from the right and broadcast where 1). Causal masks key j > query i
 * (top-left). p_fmt: the format P and dS are cast to before the products
 * with dO, K and Q (the input type in flash kernels; OC_FP32: not cast).
 * Judged rows: dq's query rows, dk's and dv's key rows (each the sum over
 * every query row of its head), sampled as the forward's (ORACLE.md §4);
 * bound and special values in attention_grad.c. Grouped-query attention:
 * dq with k and v broadcast over a group dim of q, o, g, lse; dk and dv
 * with q, o and g of rank out's + 1 ([.., G, Sq, *], lse [.., G, Sq]):
 * each key row summed over the G query heads of its group too. */
struct oc_attention_grad_args {
  const struct oc_tensor *q, *k, *v, *o, *g, *lse;
  double scale;
  int causal;
  enum oc_format p_fmt;
  enum oc_attn_grad_which which;
};
int oc_check_attention_backward(const struct oc_attention_grad_args *args,
                                const struct oc_tensor *out, const struct oc_profile *p,
                                const struct oc_options *o, struct oc_verdict *v);

#endif
