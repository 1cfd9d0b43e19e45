/* libkcheck/contract_ann.c — a contract made from an annotation
 * (kcheck_annotate_*) for one launch: the annotated tensors are found in
 * the launch's parameter bytes by their pointers, and each becomes a tensor
 * field of the parameter that holds it (plain pointer parameters and
 * pointers inside struct parameters alike); every other parameter is
 * opaque. The result is an ordinary contract, so the contract gates run on
 * it unchanged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract.h"
#include "kernel.h"

/* The byte offset of the only 8-byte-aligned word equal to ptr; -1 when it
 * is absent, -2 when it occurs more than once (kcheck could not relocate
 * every copy, so the launch is not taken). */
static long find_word(const unsigned char *buf, size_t size, uint64_t ptr) {
  long at = -1;
  for (size_t o = 0; o + 8 <= size; o += 8) {
    uint64_t w;
    memcpy(&w, buf + o, 8);
    if (w != ptr) continue;
    if (at >= 0) return -2;
    at = (long)o;
  }
  return at;
}

static struct kc_expr *constant(long v) {
  char text[32], err[64];
  int pos = 0;
  snprintf(text, sizeof text, "%ld", v);
  return kc_expr_compile(text, 0, NULL, NULL, err, sizeof err, &pos);
}

static int fill_tensor(struct kc_ct_value *f, const struct kc_ann_tensor *t, int index) {
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

struct kc_contract *kc_contract_from_annotation(const struct kc_annotation *a,
                                                const struct kc_kernel *k,
                                                const unsigned char *param_buf, size_t param_size) {
  if (!a || !k || k->nparams <= 0 || !a->ntensors) return NULL;
  long at[KC_ANN_MAX_TENSORS];
  int owner[KC_ANN_MAX_TENSORS];
  for (int i = 0; i < a->ntensors; i++) {
    for (int j = 0; j < i; j++)
      if (a->t[j].ptr == a->t[i].ptr) return NULL; /* one buffer, two roles */
    at[i] = find_word(param_buf, param_size, (uint64_t)(uintptr_t)a->t[i].ptr);
    if (at[i] < 0) return NULL; /* not this launch's tensors */
    owner[i] = -1;
    for (int p = 0; p < k->nparams; p++) {
      uint32_t end = p + 1 < k->nparams ? k->param_offset[p + 1] : (uint32_t)param_size;
      if ((uint32_t)at[i] >= k->param_offset[p] && (uint32_t)at[i] + 8 <= end) owner[i] = p;
    }
    if (owner[i] < 0) return NULL;
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
    struct kc_ct_param *cp = &c->params[p];
    char name[16];
    snprintf(name, sizeof name, "p%d", p);
    cp->v.name = strdup(name);
    cp->v.kind = KC_PK_OPAQUE;
    ok = cp->v.name != NULL;
    int n = 0;
    for (int i = 0; i < a->ntensors; i++)
      n += owner[i] == p;
    if (!ok || !n) continue;
    cp->v.kind = KC_PK_STRUCT;
    cp->fields = calloc((size_t)n, sizeof *cp->fields);
    ok = cp->fields != NULL;
    /* Fields in offset order, as the binding visits them. */
    for (int i = 0; ok && i < a->ntensors; i++) {
      if (owner[i] != p) continue;
      int slot = cp->nfields++;
      while (slot > 0 && cp->fields[slot - 1].offset > (uint32_t)at[i] - k->param_offset[p]) {
        cp->fields[slot] = cp->fields[slot - 1];
        slot--;
      }
      memset(&cp->fields[slot], 0, sizeof cp->fields[slot]);
      cp->fields[slot].offset = (uint32_t)at[i] - k->param_offset[p];
      ok = !fill_tensor(&cp->fields[slot], &a->t[i], i);
    }
  }
  if (!ok) {
    kc_contract_free(c);
    return NULL;
  }
  return c;
}
