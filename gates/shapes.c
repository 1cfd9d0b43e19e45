/* gates/shapes.c — contract: the kernel is right at every shape its domain
 * admits, not only the application's. Relaunches at other values of the
 * scalars that size its tensors — the contract's own `shapes` rows first,
 * then 1, small odd sizes, tile sizes ± 1 (31/33, 63/65, 127/129, 255/257),
 * primes and a large size (shape_rules.def, the op level's list too), each
 * for all size scalars at once, and two mixes
 * where they differ — with grid, block and shared memory from the
 * contract's `launch` section, generated signed inputs, outputs poisoned
 * with NaN and guard zones around every tensor. A failing verdict or a
 * changed guard zone is a violation; the evidence names the scalars.
 *
 * A contract that understates a tensor would make these relaunches store
 * past kcheck's buffers. So the gate first runs once at the application's
 * own shape with every tensor's guard zone covering the rest of the
 * application's allocation (calibration): a kernel that writes outside a
 * declared extent there is reported, and no other shape is run. At other
 * shapes the guard zones are sized independently of the contract
 * (shadow_buffers.c: reshaped_reach) and checked after every run.
 *
 * These are launches the application never made: a kernel that faults at
 * another shape (an access beyond even those guard zones) leaves the CUDA
 * context unusable, so this gate is not in the default gate list. */
#include <stdlib.h>
#include <string.h>

#include "allocmap.h"
#include "gate.h"
#include "gate_util.h"
#include "options.h"
#include "trial.h"

#define MAX_TRIALS 20
#define MAX_BYTES (64ull << 20)
#define MAX_WORK (1ll << 25) /* product of the size scalars */

/* shape_rules.def: the sizes every size scalar takes at once, and the
 * values the scalars take in turn in the mixes (the op level reads the
 * same file). */
static const int64_t sizes[] = {
#define KC_SHAPE_SIZE(n) n,
#include "shape_rules.def"
};
static const int64_t mix[] = {
#define KC_SHAPE_MIX(n) n,
#include "shape_rules.def"
};
#define NMIX ((int)(sizeof mix / sizeof mix[0]))

/* Calls fn on every tensor declaration of c. */
static void each_tensor(const struct kc_contract *c,
                        void (*fn)(const struct kc_contract_tensor *, void *), void *ctx) {
  for (int i = 0; i < c->nparams; i++) {
    const struct kc_contract_param *p = &c->params[i];
    if (p->v.kind == KC_PK_TENSOR) fn(&p->v.tensor, ctx);
    for (int j = 0; p->v.kind == KC_PK_STRUCT && j < p->nfields; j++)
      if (p->fields[j].kind == KC_PK_TENSOR) fn(&p->fields[j].tensor, ctx);
  }
}

struct probe {
  const int64_t *base;
  int64_t *vars;
  int changed_shape, changed_stride;
};

static int differs(const struct kc_contract_expr *e, const struct probe *p) {
  int64_t a = 0, b = 0;
  char err[64];
  if (!e) return 0;
  int ra = kc_contract_expr_eval(e, p->base, &a, err, sizeof err);
  int rb = kc_contract_expr_eval(e, p->vars, &b, err, sizeof err);
  return ra != rb || a != b;
}

static void probe_tensor(const struct kc_contract_tensor *t, void *ctx) {
  struct probe *p = ctx;
  for (int r = 0; r < t->rank; r++) {
    p->changed_shape |= differs(t->shape[r], p);
    p->changed_stride |= differs(t->strides[r], p);
  }
}

/* Which integer scalars size a tensor (1) or only place it (2). base holds
 * the scalars and then the launch variables (gridDim/blockDim, read by
 * shapes that use them): vars must be as long, and at a probed value the
 * launch variables are the launch section's there. */
static void classify(const struct kc_contract *c, const int64_t *base, int *kind) {
  int64_t vars[KC_CONTRACT_MAX_SCALARS + KC_CONTRACT_LAUNCH_VARS];
  struct kc_contract_binding *at = c->uses_launch_dims ? malloc(sizeof *at) : NULL;
  for (int i = 0; i < c->nscalars && i < KC_CONTRACT_MAX_SCALARS; i++) {
    kind[i] = 0;
    if (c->scalars[i]->scalar == KC_SC_F32 || c->scalars[i]->scalar == KC_SC_F64) continue;
    memcpy(vars, base, sizeof vars);
    vars[i] = base[i] + 7;
    unsigned grid[3], block[3], shmem;
    char err[64];
    if (at) {
      memcpy(at->ivals, vars, sizeof vars);
      if (kc_contract_launch_dims(c, at, grid, block, &shmem, err, sizeof err) == 0)
        for (int d = 0; d < 3; d++) {
          vars[KC_CONTRACT_LAUNCH_VAR0 + d] = grid[d];
          vars[KC_CONTRACT_LAUNCH_VAR0 + 3 + d] = block[d];
        }
    }
    struct probe p = {base, vars, 0, 0};
    each_tensor(c, probe_tensor, &p);
    kind[i] = p.changed_shape ? 1 : p.changed_stride ? 2 : 0;
  }
  free(at);
}

/* Do two elements of tensor t share storage? */
static int overlaps(const struct kc_contract_tensor_val *t) {
  int order[KC_CONTRACT_MAX_RANK], n = 0;
  for (int r = 0; r < t->rank; r++)
    if (t->shape[r] > 1) {
      if (t->strides[r] <= 0) return 1;
      order[n++] = r;
    }
  for (int a = 1; a < n; a++) /* insertion sort by stride */
    for (int b = a; b > 0 && t->strides[order[b]] < t->strides[order[b - 1]]; b--) {
      int x = order[b];
      order[b] = order[b - 1];
      order[b - 1] = x;
    }
  int64_t span = 1;
  for (int k = 0; k < n; k++) {
    if (t->strides[order[k]] < span) return 1;
    span += (t->shape[order[k]] - 1) * t->strides[order[k]];
  }
  return 0;
}

/* Does the launch with these scalars satisfy the domain, with outputs that
 * do not overlap themselves? */
static int admissible(const struct kc_contract *c, const struct kc_launch_info *li,
                      const int64_t *ivals) {
  char err[128];
  unsigned char *buf = malloc(li->param_size ? li->param_size : 1);
  struct kc_contract_binding *b = malloc(sizeof *b);
  int ok = buf && b && kc_contract_bind_at(c, li, ivals, buf, b, err, sizeof err) == 0;
  for (int i = 0; ok && i < b->ntensors; i++)
    if (b->tensors[i].v->tensor.role != KC_ROLE_IN && overlaps(&b->tensors[i])) ok = 0;
  free(buf);
  free(b);
  return ok;
}

/* Sets the size scalars to want[i] (kind 1) and tries the placement-only
 * ones (kind 2) as the application had them, then equal to `place`. out is
 * a row of 64 after the rows from `taken` on: a repeat of one is refused. */
static int repeated(const struct kc_contract *c, const int64_t *taken, const int64_t *out) {
  for (const int64_t *prev = taken; prev < out; prev += 64)
    if (!memcmp(out, prev, (size_t)c->nscalars * sizeof *out)) return 1;
  return 0;
}

static int assign(const struct kc_contract *c, const struct kc_launch_info *li, const int64_t *base,
                  const int *kind, const int64_t *want, int64_t place, const int64_t *taken,
                  int64_t *out) {
  int64_t work = 1;
  for (int i = 0; i < c->nscalars; i++) {
    out[i] = kind[i] == 1 ? want[i] : base[i];
    if (kind[i] == 1 && __builtin_mul_overflow(work, want[i] > 0 ? want[i] : 1, &work)) return 0;
  }
  if (work > MAX_WORK || !memcmp(out, base, (size_t)c->nscalars * sizeof *out)) return 0;
  if (admissible(c, li, out)) return !repeated(c, taken, out);
  for (int i = 0; i < c->nscalars; i++)
    if (kind[i] == 2) out[i] = place;
  return admissible(c, li, out) && !repeated(c, taken, out);
}

/* Marks the 8-byte parameter words a shadow relaunch relocates: each
 * tensor's pointer (a parameter, a struct field, their aliases). */
static void mark(uint8_t *reloc, size_t nwords, uint64_t at) {
  if (at % 8 == 0 && at / 8 < nwords) reloc[at / 8] = 1;
}

static void mark_value(const struct kc_contract_value *v, uint64_t at, uint8_t *reloc,
                       size_t nwords) {
  if (v->kind != KC_PK_TENSOR) return;
  mark(reloc, nwords, at);
  for (int a = 0; a < v->nalias && a < 4; a++)
    mark(reloc, nwords, v->alias_at[a]);
}

/* A parameter word the relaunch would pass unrelocated although it points
 * into memory kcheck does not own: an `opaque` parameter, or a struct
 * field the contract does not declare. At the application's shape the
 * shadow saves and restores what the launch may write; at a larger shape
 * a kernel storing through that pointer writes past what the application
 * ever exposed, into its allocation or beyond. Returns the word's byte
 * offset, or -1 when every pointer word is relocated. */
static long stray_pointer(const struct kc_contract *c, const struct kc_launch_info *li) {
  const struct kc_kernel *k = li->k;
  size_t nwords = li->param_size / 8;
  if (!nwords) return -1;
  uint8_t *reloc = calloc(nwords, 1);
  if (!reloc) return 0; /* unknown: refused, never run unrelocated */
  for (int i = 0; k && i < c->nparams && i < k->nparams; i++) {
    const struct kc_contract_param *p = &c->params[i];
    if (p->v.kind == KC_PK_STRUCT)
      for (int j = 0; j < p->nfields; j++)
        mark_value(&p->fields[j], (uint64_t)k->param_offset[i] + p->fields[j].offset, reloc,
                   nwords);
    else
      mark_value(&p->v, k->param_offset[i], reloc, nwords);
  }
  long stray = -1;
  /* The pointers the capture resolved (kcheck's map or the driver)... */
  for (int i = 0; stray < 0 && i < li->nptrs; i++)
    if (li->ptrs[i].offset / 8 >= nwords || !reloc[li->ptrs[i].offset / 8])
      stray = li->ptrs[i].offset;
  /* ...and any word in kcheck's map, should the capture have skipped it. */
  for (size_t w = 0; stray < 0 && w < nwords; w++) {
    uint64_t v;
    struct kc_alloc a;
    memcpy(&v, li->param_buf + 8 * w, 8);
    if (!reloc[w] && v && kc_allocmap_find(v, &a) == 0) stray = (long)(8 * w);
  }
  free(reloc);
  return stray;
}

/* The calibration run at the application's shape (see the top). 0: the
 * extents hold; 1: a violation was reported; -1: it could not run (the
 * result says why). Either of the last two stops the gate. */
static int calibrate(struct kc_gate_ctx *ctx) {
  struct kc_contract_sb sb;
  if (kc_gate_sb_create(ctx, &sb) || kc_gate_sb_run(ctx, &sb, 0xFF)) {
    ctx->out.status = KC_GS_INCONCLUSIVE; /* the error field says why */
    return -1;
  }
  json_t *guards = kc_trial_guard_damage(&sb);
  if (guards) {
    json_t *ev =
        json_pack("{s:s, s:s, s:o, s:o}", "verdict", "out_of_bounds", "stage", "calibration",
                  "guard_damage", guards, "exposed_by", kc_exposed_by(&sb, NULL, 0));
    kc_gate_violation(ctx, json_pack("{s:s, s:o}", "message",
                                     "at the application's own shape the kernel writes outside a "
                                     "tensor's declared extent (a kernel bug, or a contract that "
                                     "understates the tensor): no other shape is run",
                                     "evidence", ev));
    ctx->out.status = KC_GS_FAIL;
    json_object_set_new(ctx->result, "runs", json_integer(1));
  }
  kc_contract_sb_free(&sb);
  return guards ? 1 : 0;
}

int kc_gate_shapes_run(struct kc_gate_ctx *ctx) {
  const struct kc_contract *c = ctx->contract;
  if (!c) return 0;
  if (!c->has_launch) {
    ctx->out.status = KC_GS_INCONCLUSIVE;
    json_object_set_new(ctx->result, "reason",
                        json_string("the contract has no launch section: kcheck cannot derive "
                                    "grid and block at other shapes"));
    return 0;
  }
  char err[256];
  struct kc_contract_binding *b = malloc(sizeof *b);
  int64_t(*rows)[64] = calloc(MAX_TRIALS, sizeof *rows);
  struct kc_trial trials[MAX_TRIALS];
  int n = 0;
  if (!b || !rows || c->nscalars > 64 || kc_contract_bind_launch(c, ctx->li, b, err, sizeof err)) {
    ctx->out.status = KC_GS_ERROR;
    json_object_set_new(
        ctx->result, "error",
        json_string(b && rows ? "the launch does not bind to its contract" : "out of host memory"));
    free(b);
    free(rows);
    return 0;
  }
  long stray = stray_pointer(c, ctx->li);
  if (stray >= 0) {
    char why[320];
    snprintf(why, sizeof why,
             "the parameter bytes at offset %ld hold a pointer into the application's memory "
             "that the contract does not declare as a tensor (an opaque parameter or an "
             "undeclared struct field): a relaunch at another shape would pass it unrelocated "
             "and could write outside kcheck's buffers, so no other shape is run",
             stray);
    ctx->out.status = KC_GS_INCONCLUSIVE;
    json_object_set_new(ctx->result, "reason", json_string(why));
    free(b);
    free(rows);
    return 0;
  }
  int kind[64] = {0};
  classify(c, b->ivals, kind);
  int64_t want[64];
  /* The contract's own shapes: given values over the application's. */
  for (int s = 0; s < c->nshapes && n < MAX_TRIALS; s++) {
    for (int i = 0; i < c->nscalars; i++) {
      int64_t v = c->shapes[s * c->nscalars + i];
      want[i] = v == INT64_MIN ? b->ivals[i] : v;
    }
    int saved[64];
    memcpy(saved, kind, sizeof saved);
    for (int i = 0; i < c->nscalars; i++) /* every given value is taken as is */
      if (c->shapes[s * c->nscalars + i] != INT64_MIN) kind[i] = 1;
    if (assign(c, ctx->li, b->ivals, kind, want, 0, rows[0], rows[n])) n++;
    memcpy(kind, saved, sizeof saved);
  }
  for (size_t v = 0; v < sizeof sizes / sizeof sizes[0] && n < MAX_TRIALS; v++) {
    for (int i = 0; i < c->nscalars; i++)
      want[i] = sizes[v];
    if (assign(c, ctx->li, b->ivals, kind, want, sizes[v], rows[0], rows[n])) n++;
  }
  for (int m = 0; m < 2 && n < MAX_TRIALS; m++) {
    int64_t place = 0;
    for (int i = 0, s = 0; i < c->nscalars; i++)
      if (kind[i] == 1) {
        want[i] = mix[(s++ + 2 * m) % NMIX];
        if (want[i] > place) place = want[i];
      }
    if (assign(c, ctx->li, b->ivals, kind, want, place, rows[0], rows[n])) n++;
  }
  for (int i = 0; i < n; i++)
    trials[i] = (struct kc_trial){OC_GEN_CANCEL, KC_TF_NONE, rows[i], MAX_BYTES};
  int violations = 0, cal = n ? calibrate(ctx) : 0;
  if (cal) {
    violations = cal > 0;
  } else if (!n) {
    ctx->out.status = KC_GS_INCONCLUSIVE;
    json_object_set_new(ctx->result, "reason",
                        json_string("no other shape satisfies the contract's domain"));
  } else {
    violations = kc_trials_gate(ctx, &kc_gate_shapes, trials, n, KC_VERDICT_FAILS,
                                "at another shape the outputs violate the declared op and "
                                "profile (numerical oracle)");
  }
  free(b);
  free(rows);
  return violations;
}
