/* contract/contract_ann.c — a contract made from an annotation
 * (kcheck_annotate_*) for one launch: the annotated tensors are found in
 * the launch's parameter bytes by their pointers, and each becomes a tensor
 * field of the parameter that holds it (plain pointer parameters and
 * pointers inside struct parameters alike; further copies of the same
 * pointer are relocated with it); every other parameter is opaque. The result is an ordinary
 * contract, so the contract gates run on it unchanged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract.h"
#include "kernel.h"

/* The byte offsets of the 8-byte-aligned words equal to ptr (up to max);
 * returns how many there are (may exceed max). */
static int find_words(const unsigned char *buf, size_t size, uint64_t ptr, uint32_t *at, int max) {
  int n = 0;
  for (size_t o = 0; o + 8 <= size; o += 8) {
    uint64_t w;
    memcpy(&w, buf + o, 8);
    if (w != ptr) continue;
    if (n < max) at[n] = (uint32_t)o;
    n++;
  }
  return n;
}

static struct kc_contract_expr *constant(long v) {
  char text[32], err[64];
  int pos = 0;
  snprintf(text, sizeof text, "%ld", v);
  return kc_contract_expr_compile(text, 0, NULL, NULL, err, sizeof err, &pos);
}

static int fill_tensor(struct kc_contract_value *f, const struct kc_contract_ann_tensor *t,
                       int index) {
  char name[16];
  static const char *const role[] = {"in", "out", "inout"};
  snprintf(name, sizeof name, "%s%d", role[t->role], index);
  f->name = strdup(name);
  f->kind = KC_PK_TENSOR;
  f->tensor.role = t->role;
  f->tensor.format = t->format;
  f->tensor.rank = t->rank;
  f->line = index + 1; /* the declared order: the order of annotation */
  if (!f->name) return -1;
  for (int d = 0; d < t->rank; d++)
    if (!(f->tensor.shape[d] = constant(t->shape[d])) ||
        !(f->tensor.strides[d] = constant(t->strides[d])))
      return -1;
  return 0;
}

struct kc_contract *kc_contract_from_annotation(const struct kc_contract_annotation *a,
                                                const struct kc_kernel *k,
                                                const unsigned char *param_buf, size_t param_size,
                                                char *why, size_t n) {
  enum { MAX_COPIES = 5 };
  static const char *const role[] = {"in", "out", "inout"};
  if (!a || !k || !a->ntensors) {
    snprintf(why, n, "no annotation");
    return NULL;
  }
  if (k->nparams <= 0) {
    snprintf(why, n, "the kernel's parameter layout is unknown");
    return NULL;
  }
  uint32_t at[KC_CONTRACT_ANN_MAX_TENSORS][MAX_COPIES];
  int copies[KC_CONTRACT_ANN_MAX_TENSORS], owner[KC_CONTRACT_ANN_MAX_TENSORS];
  for (int i = 0; i < a->ntensors; i++) {
    for (int j = 0; j < i; j++)
      if (a->t[j].ptr == a->t[i].ptr) {
        snprintf(why, n, "annotated tensors %d and %d share pointer %p", j, i, a->t[i].ptr);
        return NULL;
      }
    copies[i] =
        find_words(param_buf, param_size, (uint64_t)(uintptr_t)a->t[i].ptr, at[i], MAX_COPIES);
    if (!copies[i] || copies[i] > MAX_COPIES) {
      snprintf(why, n, "the pointer of %s%d (%p) occurs %d times in the parameters",
               role[a->t[i].role], i, a->t[i].ptr, copies[i]);
      return NULL;
    }
    owner[i] = -1;
    for (int p = 0; p < k->nparams; p++) {
      uint32_t end = p + 1 < k->nparams ? k->param_offset[p + 1] : (uint32_t)param_size;
      if (at[i][0] >= k->param_offset[p] && at[i][0] + 8 <= end) owner[i] = p;
    }
    if (owner[i] < 0) {
      snprintf(why, n, "the pointer of %s%d lies outside every parameter", role[a->t[i].role], i);
      return NULL;
    }
  }
  struct kc_contract *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->nparams = k->nparams;
  c->params = calloc((size_t)k->nparams, sizeof *c->params);
  c->file = strdup("annotation");
  c->where = malloc(64);
  c->pattern = strdup(k->name ? k->name : "?");
  c->op = strdup(a->op);
  int ok = c->params && c->file && c->where && c->pattern && c->op;
  if (ok) snprintf(c->where, 64, "annotation #%llu", (unsigned long long)a->serial);
  if (ok && a->has_profile) {
    c->profile = a->profile;
    ok = (c->profile_spec = strdup(a->profile_spec)) != NULL;
  }
  for (int p = 0; ok && p < k->nparams; p++) {
    struct kc_contract_param *cp = &c->params[p];
    char name[16];
    snprintf(name, sizeof name, "p%d", p);
    cp->v.name = strdup(name);
    cp->v.kind = KC_PK_OPAQUE;
    ok = cp->v.name != NULL;
    int held = 0;
    for (int i = 0; i < a->ntensors; i++)
      held += owner[i] == p;
    if (!ok || !held) continue;
    cp->v.kind = KC_PK_STRUCT;
    cp->fields = calloc((size_t)held, sizeof *cp->fields);
    ok = cp->fields != NULL;
    /* Fields in offset order, as the binding visits them. */
    for (int i = 0; ok && i < a->ntensors; i++) {
      if (owner[i] != p) continue;
      int slot = cp->nfields++;
      while (slot > 0 && cp->fields[slot - 1].offset > at[i][0] - k->param_offset[p]) {
        cp->fields[slot] = cp->fields[slot - 1];
        slot--;
      }
      memset(&cp->fields[slot], 0, sizeof cp->fields[slot]);
      cp->fields[slot].offset = at[i][0] - k->param_offset[p];
      cp->fields[slot].nalias = copies[i] - 1;
      memcpy(cp->fields[slot].alias_at, at[i] + 1, (size_t)(copies[i] - 1) * sizeof at[i][0]);
      ok = !fill_tensor(&cp->fields[slot], &a->t[i], i);
    }
  }
  if (!ok) {
    kc_contract_free(c);
    snprintf(why, n, "out of host memory");
    return NULL;
  }
  return c;
}
