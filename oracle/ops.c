/* oracle/ops.c — the ops table (ops.def) and lookups by name. */
#include "ops.h"

#include <strings.h>

#include "oracle.h"

/* Each row's value in its class's enum; a misspelt ID fails to compile
 * here, which keeps ops.def and the class enums of oracle.h in step. */
#define KIND_ELEMENTWISE(id) (int)OC_OP_##id
#define KIND_REDUCE(id) (int)OC_RED_##id
#define KIND_SOFTMAX(id) (int)OC_##id
#define KIND_MATMUL(id) 0
#define KIND_NORM(id) 0
#define KIND_ATTENTION(id) 0
#define KIND_RECURRENCE(id) 0
#define KIND_GRAD(id) (int)OC_GRAD_##id
#define KIND_GATHER(id) 0
#define KIND_POINTWISE(id) (int)OC_PW_##id
#define KIND_LOSS(id) (int)OC_LOSS_##id
#define KIND_OPTIM(id) (int)OC_OPTIM_##id
#define KIND_BATCH_NORM(id) 0
#define KIND_POOL(id) 0
#define KIND_CONV(id) (int)OC_CONV_OP_##id

static const struct oc_op_info rows[OC_ID_COUNT] = {
#define OC_OPDEF(id, name, arity, cls) {OC_ID_##id, name, arity, OC_CLASS_##cls, KIND_##cls(id)},
#include "ops.def"
};

static const struct {
  const char *alias;
  enum oc_opid id;
} aliases[] = {
#define OC_OPDEF(id, name, arity, cls)
#define OC_OPALIAS(alias, id) {alias, OC_ID_##id},
#include "ops.def"
};

const struct oc_op_info *oc_op_by_id(enum oc_opid id) {
  return (unsigned)id < OC_ID_COUNT ? &rows[id] : NULL;
}

const struct oc_op_info *oc_op_find(const char *name) {
  if (!name) return NULL;
  for (int i = 0; i < OC_ID_COUNT; i++)
    if (!strcasecmp(name, rows[i].name)) return &rows[i];
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (!strcasecmp(name, aliases[i].alias)) return &rows[aliases[i].id];
  return NULL;
}

const char *oc_op_class_name(enum oc_op_class cls) {
  static const char *const names[] = {"elementwise", "matmul",    "reduce",     "softmax",
                                      "norm",        "attention", "recurrence", "grad",
                                      "gather",      "pointwise", "loss",       "optim",
                                      "batch_norm",  "pool",      "conv"};
  return (unsigned)cls < sizeof names / sizeof names[0] ? names[cls] : "?";
}
