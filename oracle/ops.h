/* oracle/ops.h — the table of oracle ops built from ops.def: for each op
 * its name, the input tensors it requires and the oracle entry (class) that
 * judges it. Callers name ops through this table instead of comparing
 * strings; enum oc_op (elementwise.h) is made from the elementwise rows. */
#ifndef OC_OPS_H
#define OC_OPS_H

enum oc_op_class {
  OC_CLASS_ELEMENTWISE, /* oc_check_elementwise */
  OC_CLASS_MATMUL,      /* oc_check_matmul */
  OC_CLASS_REDUCE,      /* oc_check_reduce */
  OC_CLASS_SOFTMAX,     /* oc_check_softmax */
  OC_CLASS_NORM,        /* oc_check_layer_norm, oc_check_rms_norm */
  OC_CLASS_ATTENTION,   /* oc_check_attention */
  OC_CLASS_RECURRENCE,  /* oc_check_gated_delta */
  OC_CLASS_GRAD,        /* oc_check_grad (gradients of activations, softmax family) */
  OC_CLASS_GATHER,      /* oc_check_index_select */
  OC_CLASS_POINTWISE,   /* oc_check_pointwise (three operand tensors) */
  OC_CLASS_LOSS,        /* oc_check_nll_loss */
  OC_CLASS_OPTIM,       /* oc_check_optim (optimizer updates) */
  OC_CLASS_BATCH_NORM,  /* oc_check_batch_norm (cnn.h) */
  OC_CLASS_POOL,        /* oc_check_pool (cnn.h) */
  OC_CLASS_CONV,        /* oc_check_conv */
};

enum oc_opid {
#define OC_OPDEF(id, name, arity, cls) OC_ID_##id,
#include "ops.def"
  OC_ID_COUNT
};

struct oc_op_info {
  enum oc_opid id;
  const char *name;
  int arity; /* input tensors required */
  enum oc_op_class cls;
  /* The op in its class's own enum: enum oc_op (ELEMENTWISE), enum
   * oc_reduce_op (REDUCE), enum oc_softmax_kind (SOFTMAX), enum oc_grad_op
   * (GRAD), enum oc_pw_op (POINTWISE), enum oc_loss_op (LOSS), enum
   * oc_optim_op (OPTIM), enum oc_conv_op (CONV); 0 otherwise. */
  int kind;
};

/* The row of id; NULL for an id past the table. */
const struct oc_op_info *oc_op_by_id(enum oc_opid id);
/* The row named name or one of its aliases (case-insensitive); NULL when
 * unknown or name is NULL. */
const struct oc_op_info *oc_op_find(const char *name);
/* "elementwise", "matmul", ...; "?" for a value outside the enum. */
const char *oc_op_class_name(enum oc_op_class cls);

/* OC_OP_IF_EW(CLASS, ...): the rest of the arguments for ELEMENTWISE rows,
 * nothing for the others (filters ops.def rows, e.g. into enum oc_op). */
#define OC_OP_IF_EW(cls, ...) OC_OP_IF_EW_##cls(__VA_ARGS__)
#define OC_OP_IF_EW_ELEMENTWISE(...) __VA_ARGS__
#define OC_OP_IF_EW_MATMUL(...)
#define OC_OP_IF_EW_REDUCE(...)
#define OC_OP_IF_EW_SOFTMAX(...)
#define OC_OP_IF_EW_NORM(...)
#define OC_OP_IF_EW_ATTENTION(...)
#define OC_OP_IF_EW_RECURRENCE(...)
#define OC_OP_IF_EW_GRAD(...)
#define OC_OP_IF_EW_GATHER(...)
#define OC_OP_IF_EW_POINTWISE(...)
#define OC_OP_IF_EW_LOSS(...)
#define OC_OP_IF_EW_OPTIM(...)
#define OC_OP_IF_EW_BATCH_NORM(...)
#define OC_OP_IF_EW_POOL(...)
#define OC_OP_IF_EW_CONV(...)

/* OC_OP_IF_GRAD(CLASS, ...): the same filter for GRAD rows (enum oc_grad_op). */
#define OC_OP_IF_GRAD(cls, ...) OC_OP_IF_GRAD_##cls(__VA_ARGS__)
#define OC_OP_IF_GRAD_GRAD(...) __VA_ARGS__
#define OC_OP_IF_GRAD_ELEMENTWISE(...)
#define OC_OP_IF_GRAD_MATMUL(...)
#define OC_OP_IF_GRAD_REDUCE(...)
#define OC_OP_IF_GRAD_SOFTMAX(...)
#define OC_OP_IF_GRAD_NORM(...)
#define OC_OP_IF_GRAD_ATTENTION(...)
#define OC_OP_IF_GRAD_RECURRENCE(...)
#define OC_OP_IF_GRAD_GATHER(...)
#define OC_OP_IF_GRAD_POINTWISE(...)
#define OC_OP_IF_GRAD_LOSS(...)
#define OC_OP_IF_GRAD_OPTIM(...)
#define OC_OP_IF_GRAD_BATCH_NORM(...)
#define OC_OP_IF_GRAD_POOL(...)
#define OC_OP_IF_GRAD_CONV(...)

/* OC_OP_IF_PW(CLASS, ...): the same filter for POINTWISE rows (enum oc_pw_op). */
#define OC_OP_IF_PW(cls, ...) OC_OP_IF_PW_##cls(__VA_ARGS__)
#define OC_OP_IF_PW_POINTWISE(...) __VA_ARGS__
#define OC_OP_IF_PW_ELEMENTWISE(...)
#define OC_OP_IF_PW_MATMUL(...)
#define OC_OP_IF_PW_REDUCE(...)
#define OC_OP_IF_PW_SOFTMAX(...)
#define OC_OP_IF_PW_NORM(...)
#define OC_OP_IF_PW_ATTENTION(...)
#define OC_OP_IF_PW_RECURRENCE(...)
#define OC_OP_IF_PW_GRAD(...)
#define OC_OP_IF_PW_GATHER(...)
#define OC_OP_IF_PW_LOSS(...)
#define OC_OP_IF_PW_OPTIM(...)
#define OC_OP_IF_PW_BATCH_NORM(...)
#define OC_OP_IF_PW_POOL(...)
#define OC_OP_IF_PW_CONV(...)

/* OC_OP_IF_LOSS(CLASS, ...): the same filter for LOSS rows (enum oc_loss_op). */
#define OC_OP_IF_LOSS(cls, ...) OC_OP_IF_LOSS_##cls(__VA_ARGS__)
#define OC_OP_IF_LOSS_LOSS(...) __VA_ARGS__
#define OC_OP_IF_LOSS_ELEMENTWISE(...)
#define OC_OP_IF_LOSS_MATMUL(...)
#define OC_OP_IF_LOSS_REDUCE(...)
#define OC_OP_IF_LOSS_SOFTMAX(...)
#define OC_OP_IF_LOSS_NORM(...)
#define OC_OP_IF_LOSS_ATTENTION(...)
#define OC_OP_IF_LOSS_RECURRENCE(...)
#define OC_OP_IF_LOSS_GRAD(...)
#define OC_OP_IF_LOSS_GATHER(...)
#define OC_OP_IF_LOSS_POINTWISE(...)
#define OC_OP_IF_LOSS_BATCH_NORM(...)
#define OC_OP_IF_LOSS_POOL(...)
#define OC_OP_IF_LOSS_OPTIM(...)
#define OC_OP_IF_LOSS_CONV(...)

/* OC_OP_IF_OPTIM(CLASS, ...): the same filter for OPTIM rows (enum oc_optim_op). */
#define OC_OP_IF_OPTIM(cls, ...) OC_OP_IF_OPTIM_##cls(__VA_ARGS__)
#define OC_OP_IF_OPTIM_OPTIM(...) __VA_ARGS__
#define OC_OP_IF_OPTIM_ELEMENTWISE(...)
#define OC_OP_IF_OPTIM_MATMUL(...)
#define OC_OP_IF_OPTIM_REDUCE(...)
#define OC_OP_IF_OPTIM_SOFTMAX(...)
#define OC_OP_IF_OPTIM_NORM(...)
#define OC_OP_IF_OPTIM_ATTENTION(...)
#define OC_OP_IF_OPTIM_RECURRENCE(...)
#define OC_OP_IF_OPTIM_GRAD(...)
#define OC_OP_IF_OPTIM_GATHER(...)
#define OC_OP_IF_OPTIM_POINTWISE(...)
#define OC_OP_IF_OPTIM_LOSS(...)
#define OC_OP_IF_OPTIM_BATCH_NORM(...)
#define OC_OP_IF_OPTIM_POOL(...)
#define OC_OP_IF_OPTIM_CONV(...)

/* OC_OP_IF_CONV(CLASS, ...): the same filter for CONV rows (enum oc_conv_op). */
#define OC_OP_IF_CONV(cls, ...) OC_OP_IF_CONV_##cls(__VA_ARGS__)
#define OC_OP_IF_CONV_CONV(...) __VA_ARGS__
#define OC_OP_IF_CONV_ELEMENTWISE(...)
#define OC_OP_IF_CONV_MATMUL(...)
#define OC_OP_IF_CONV_REDUCE(...)
#define OC_OP_IF_CONV_SOFTMAX(...)
#define OC_OP_IF_CONV_NORM(...)
#define OC_OP_IF_CONV_ATTENTION(...)
#define OC_OP_IF_CONV_RECURRENCE(...)
#define OC_OP_IF_CONV_GRAD(...)
#define OC_OP_IF_CONV_GATHER(...)
#define OC_OP_IF_CONV_POINTWISE(...)
#define OC_OP_IF_CONV_LOSS(...)
#define OC_OP_IF_CONV_OPTIM(...)
#define OC_OP_IF_CONV_BATCH_NORM(...)
#define OC_OP_IF_CONV_POOL(...)

#endif
