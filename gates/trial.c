/* gates/trial.c — runs of a contracted kernel on inputs kcheck generates:
 * the adversarial generators of oracle/adversarial.h, optionally rescaled
 * to extreme magnitudes, at the application's shape or at other scalar
 * values. Each trial is one shadow run judged by the oracle; the gates that
 * use them (nonfinite, precision, extremes, shapes) differ only in their
 * trial lists and in which verdicts count as violations. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/kcheck.h"
#include "gate.h"
#include "gate_util.h"
#include "judge.h"
#include "options.h"
#include "trial.h"

#define POISON KC_FILL_NAN /* NaN in every float format */

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t kc_trial_seed(const char *gate, int trial) {
  uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a of the gate id */
  for (const char *p = gate; *p; p++)
    h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
  /* 53 bits: the report's JSON integer is exact in every reader. */
  return mix64((uint64_t)kc_opt.seed * 0x9e3779b97f4a7c15ULL ^ h ^ (uint64_t)trial) >> 11;
}

const char *kc_transform_name(enum kc_transform t) {
  static const char *const names[] = {"none", "huge", "tiny", "subnormal", "zeros"};
  return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

/* x in [-1, 1) moved to the magnitude the transform names, in format f. */
static double transform(enum kc_transform t, double x, const struct oc_format_info *fi) {
  switch (t) {
  case KC_TF_HUGE: return ldexp(x, fi->emax / 4);        /* squares and sums of them stay finite */
  case KC_TF_TINY: return ldexp(x, fi->emin_normal / 4); /* products stay normal */
  case KC_TF_SUBNORMAL: return ldexp(x, fi->emin_normal - 1); /* below the smallest normal */
  case KC_TF_ZEROS: return copysign(0.0, x);
  default: return x;
  }
}

/* The generator's operand role of input k: matmul's A and B by name or
 * position, other ops by position (the third and later share role V). */
static int gen_role(const struct kc_contract *c, const struct kc_contract_sb_tensor *t, int k) {
  const struct oc_op_info *op = oc_op_find(c->op);
  if (op && op->id == OC_ID_MATMUL) {
    const char *name = t->t->v->name;
    if (!strcmp(name, "A") || !strcmp(name, "a")) return OC_ROLE_A;
    if (!strcmp(name, "B") || !strcmp(name, "b")) return OC_ROLE_B;
  }
  return k < 2 ? k : OC_ROLE_V;
}

int kc_generate_packed(int gen, enum kc_transform tf, int fmt, int role, int64_t rows, int64_t cols,
                       uint64_t seed, void *out) {
  if (gen < 0 || gen >= OC_GEN_COUNT || fmt < 0 || fmt >= OC_FORMAT_COUNT || rows < 0 || cols < 0 ||
      (unsigned)tf > KC_TF_ZEROS)
    return -1;
  const struct oc_format_info *fi = oc_format_info((enum oc_format)fmt);
  size_t count = (size_t)(rows * cols), esize = (size_t)(fi->bits / 8);
  double *vals = malloc((count ? count : 1) * sizeof *vals);
  if (!vals) return -1;
  if (count && oc_generate((enum oc_gen)gen, OC_FP64, role, rows, cols, seed, NULL, vals)) {
    free(vals);
    return -1;
  }
  /* fp32 and fp64: the hardware conversion is the same round-to-nearest-
   * even with IEEE overflow as oc_encode (an order of magnitude faster on
   * the multi-million-element tensors the PyTorch binding generates), unless
   * the thread flushes subnormals (MXCSR FTZ/DAZ, e.g.
   * torch.set_flush_denormal): then, and for NaN, oc_encode. */
  volatile double tiny = 0x1p-140;
  int hw =
      (fmt == OC_FP32 || fmt == OC_FP64) && (float)tiny != 0.0f && (double)tiny * 0x1p-900 != 0;
  for (size_t e = 0; e < count; e++) {
    double v = transform(tf, vals[e], fi);
    unsigned char *dst = (unsigned char *)out + e * esize;
    if (hw && v == v) {
      if (fmt == OC_FP32) {
        float f = (float)v;
        memcpy(dst, &f, sizeof f);
      } else {
        memcpy(dst, &v, sizeof v);
      }
      continue;
    }
    uint64_t bits = oc_encode((enum oc_format)fmt, v, OC_OVF_IEEE);
    /* little-endian: the low bytes are the pattern */
    memcpy(dst, &bits, esize);
  }
  free(vals);
  return 0;
}

/* Tensor t as the generators see it: rows x cols, cols its last extent and
 * rows the product of the others (a scalar: 1 x 1). 0, or 1 for a negative
 * extent or a product that overflows. */
static int gen_extent(const struct kc_contract_sb_tensor *t, int64_t *rows, int64_t *cols) {
  int rank = t->t->rank;
  *cols = rank ? t->t->shape[rank - 1] : 1;
  *rows = 1;
  int bad = *cols < 0;
  for (int r = 0; r + 1 < rank; r++)
    bad |= t->t->shape[r] < 0 || __builtin_mul_overflow(*rows, t->t->shape[r], rows);
  return bad;
}

/* The fewest rows among the inputs generate() fills in sb (0 when none):
 * what decides how many runs the specials generator needs. */
static int64_t fewest_rows(const struct kc_contract_sb *sb) {
  int64_t fewest = 0;
  for (int i = 0; i < sb->n; i++) {
    const struct kc_contract_sb_tensor *t = &sb->t[i];
    int64_t rows, cols;
    if (t->role == KC_ROLE_OUT || t->t->v->tensor.format >= KC_FMT_INT8 ||
        gen_extent(t, &rows, &cols))
      continue;
    if (!fewest || rows < fewest) fewest = rows;
  }
  return fewest;
}

static int generate(struct kc_contract_sb *sb, const struct kc_contract *c,
                    const struct kc_trial *tr, uint64_t seed, char *err, size_t n) {
  int k = 0, order[64];
  kc_contract_sb_declared_order(sb, order);
  for (int o = 0; o < sb->n; o++) {
    struct kc_contract_sb_tensor *t = &sb->t[order[o]];
    if (t->role == KC_ROLE_OUT) continue;
    int fmt = t->t->v->tensor.format;
    if (fmt >= KC_FMT_INT8) {
      snprintf(err, n, "input '%s' has integer format %s: kcheck generates float inputs only",
               t->t->v->name, kc_contract_format_name(fmt));
      return -1;
    }
    int rank = t->t->rank;
    int64_t rows, cols;
    int bad = gen_extent(t, &rows, &cols);
    int64_t cnt = 0;
    size_t count = 0, esize = (size_t)t->esize, packed_bytes = 0;
    /* A negative extent (a contract that lint could not reject, e.g. -n at
     * this launch) or one whose element count overflows is no input. */
    if (bad || __builtin_mul_overflow(rows, cols, &cnt) ||
        __builtin_mul_overflow((size_t)cnt, esize, &packed_bytes) ||
        packed_bytes > kc_opt.mem_budget) {
      snprintf(err, n, "input '%s' has no usable extent at this launch", t->t->v->name);
      return -1;
    }
    count = (size_t)cnt;
    unsigned char *packed = malloc(packed_bytes + 1);
    t->owned_input = calloc(1, t->bytes ? t->bytes : 1);
    if (!packed || !t->owned_input) {
      free(packed);
      snprintf(err, n, "out of host memory");
      return -1;
    }
    t->host_input = t->owned_input;
    if (kc_generate_packed(tr->gen, tr->transform, fmt, gen_role(c, t, k), rows, cols,
                           seed + (uint64_t)k, packed)) {
      free(packed);
      snprintf(err, n, "generator %s rejected tensor '%s'", oc_gen_name((enum oc_gen)tr->gen),
               t->t->v->name);
      return -1;
    }
    /* Logical row-major order to the tensor's strided layout. */
    const int64_t *shape = t->t->shape, *stride = t->t->strides;
    int64_t idx[KC_CONTRACT_MAX_RANK] = {0};
    for (size_t e = 0; e < count; e++) {
      uint64_t off = 0;
      for (int r = 0; r < rank; r++)
        off += (uint64_t)idx[r] * (uint64_t)stride[r];
      memcpy((unsigned char *)t->owned_input + off * esize, packed + e * esize, esize);
      for (int r = rank - 1; r >= 0 && ++idx[r] == shape[r]; r--)
        idx[r] = 0;
    }
    free(packed);
    k++;
  }
  return 0;
}

/* Public API (kcheck.h): regenerates the inputs a violation's exposed_by
 * names. */
__attribute__((visibility("default"))) int
kcheck_generate(const char *generator, const char *transform, const char *format, int role,
                long long rows, long long cols, unsigned long long seed, void *out) {
  int g = generator ? oc_gen_parse(generator) : -1;
  int f = format ? oc_format_parse(format) : -1;
  int tf = -1;
  for (int i = KC_TF_NONE; i <= KC_TF_ZEROS; i++)
    if (!transform || !strcmp(transform, kc_transform_name((enum kc_transform)i))) {
      tf = transform ? i : KC_TF_NONE;
      break;
    }
  if (g < 0 || f < 0 || tf < 0 || !out) return -1;
  return kc_generate_packed(g, (enum kc_transform)tf, f, role, rows, cols, seed, out);
}

json_t *kc_exposed_by(const struct kc_contract_sb *sb, const struct kc_trial *tr, uint64_t seed) {
  json_t *o = json_object();
  if (!tr) {
    json_object_set_new(o, "inputs", json_string("application"));
  } else {
    json_object_set_new(o, "inputs", json_string("generated"));
    json_object_set_new(o, "generator", json_string(oc_gen_name((enum oc_gen)tr->gen)));
    if (tr->transform != KC_TF_NONE)
      json_object_set_new(o, "transform", json_string(kc_transform_name(tr->transform)));
    /* Input k (declaration order among inputs) came from
     * oc_generate(generator, fp64, role, rows, cols, seed + k), then the
     * transform, then rounding to its format. */
    json_object_set_new(o, "seed", json_integer((json_int_t)seed));
  }
  const struct kc_contract *c = sb->c;
  json_t *sc = json_object();
  for (int i = 0; c && i < c->nscalars && i < sb->b.nscalars; i++)
    json_object_set_new(sc, c->scalars[i]->name, json_integer((json_int_t)sb->b.ivals[i]));
  json_object_set_new(o, "scalars", sc);
  json_t *shapes = json_object();
  for (int i = 0; i < sb->n; i++)
    json_object_set_new(shapes, sb->t[i].t->v->name,
                        kc_gate_index_json(sb->t[i].t->shape, sb->t[i].t->rank));
  json_object_set_new(o, "shapes", shapes);
  json_object_set_new(o, "grid", json_pack("[iii]", sb->grid[0], sb->grid[1], sb->grid[2]));
  json_object_set_new(o, "block", json_pack("[iii]", sb->block[0], sb->block[1], sb->block[2]));
  return o;
}

int kc_trial_run(struct kc_gate_ctx *ctx, const struct kc_contract *c, const struct kc_trial *tr,
                 uint64_t seed, struct kc_contract_sb *sb, struct kc_judgment *j) {
  memset(j, 0, sizeof *j);
  int r = kc_contract_sb_create_at(sb, ctx->li, c, tr->scalars, j->err, sizeof j->err);
  if (r) return r > 0 ? 1 : -1;
  uint64_t total = 0;
  for (int i = 0; i < sb->n; i++)
    total += sb->t[i].bytes;
  if (tr->max_bytes && total > tr->max_bytes) {
    snprintf(j->err, sizeof j->err, "tensors of %llu bytes: over the trial's limit",
             (unsigned long long)total);
    kc_contract_sb_free(sb);
    return 1;
  }
  if (generate(sb, c, tr, seed, j->err, sizeof j->err) ||
      kc_contract_sb_run(sb, ctx->shadow, POISON, j->err, sizeof j->err)) {
    kc_contract_sb_free(sb);
    return -1;
  }
  return kc_judge(c, sb, j) ? 2 : 0;
}

json_t *kc_trial_guard_damage(const struct kc_contract_sb *sb) {
  for (int i = 0; i < sb->n; i++) {
    const struct kc_contract_sb_tensor *t = &sb->t[i];
    const unsigned char *before = t->after, *after = t->after + KC_CONTRACT_SB_GUARD + t->bytes;
    /* The bounds gate's rule (byte_verdicts.c) on both guard zones. */
    long long first_after, last_before;
    long changed = (long)(kcheck_bytes_not_fill(after, t->tail, KC_CONTRACT_SB_GUARD_BYTE,
                                                &first_after, NULL) +
                          kcheck_bytes_not_fill(before, KC_CONTRACT_SB_GUARD,
                                                KC_CONTRACT_SB_GUARD_BYTE, NULL, &last_before));
    if (!changed) continue;
    int past = first_after >= 0;
    json_t *o = json_pack("{s:s, s:s, s:i, s:I, s:I, s:I}", "tensor", t->t->v->name, "side",
                          past ? "after_end" : "before_start",
                          past ? "bytes_past_end" : "bytes_before_start",
                          (int)(past ? first_after : (long)KC_CONTRACT_SB_GUARD - last_before),
                          "changed_bytes", (json_int_t)changed, "tensor_bytes",
                          (json_int_t)t->bytes, "guard_bytes", (json_int_t)t->tail);
    /* The last guard byte changed: the stores may have gone further than
     * kcheck's buffer reaches (said, so nobody reads the count as the
     * whole overrun). */
    if (t->tail && after[t->tail - 1] != KC_CONTRACT_SB_GUARD_BYTE)
      json_object_set_new(o, "reached_guard_end", json_true());
    return o;
  }
  return NULL;
}

static json_t *scalars_json(const struct kc_contract *c, const struct kc_contract_sb *sb) {
  json_t *sc = json_object();
  for (int i = 0; i < c->nscalars && i < sb->b.nscalars; i++)
    json_object_set_new(sc, c->scalars[i]->name, json_integer((json_int_t)sb->b.ivals[i]));
  return sc;
}

/* What kc_trials_gate carries from one run to the next. */
struct trials_state {
  struct kc_gate_ctx *ctx;
  unsigned fail_mask;
  const char *message;
  struct kc_judgment *j;
  json_t *list; /* one record a run */
  int violations, judged, runs;
  char first_err[sizeof((struct kc_judgment *)0)->err];
};

/* A run that gave no verdict (r: 1 skipped, < 0 not run): its record. */
static void run_not_judged(struct trials_state *st, const struct kc_trial *tr, json_t *rec, int r,
                           const struct kc_contract_sb *sb) {
  const struct kc_contract *c = st->ctx->contract;
  json_object_set_new(rec, "class", json_string(r > 0 ? "skipped" : "inconclusive"));
  json_object_set_new(rec, "reason", json_string(st->j->err));
  if (tr->scalars) {
    json_t *sc = json_object();
    for (int k = 0; k < c->nscalars; k++)
      json_object_set_new(sc, c->scalars[k]->name, json_integer((json_int_t)tr->scalars[k]));
    json_object_set_new(rec, "scalars", sc);
  }
  if (r < 0 && !st->first_err[0]) memcpy(st->first_err, st->j->err, sizeof st->first_err);
  json_array_append_new(st->list, rec);
  st->runs += r < 0 && sb->runs > 0;
}

/* After a run of tr at seed (judged: the oracle gave st->j's verdict):
 * a verdict in the fail mask, or a changed guard zone at the trial's own
 * scalars, is the gate's violation. */
static void report_run(struct trials_state *st, const struct kc_trial *tr, uint64_t seed,
                       int judged, const struct kc_contract_sb *sb) {
  const struct kc_contract *c = st->ctx->contract;
  struct kc_judgment *j = st->j;
  json_t *guards = tr->scalars ? kc_trial_guard_damage(sb) : NULL;
  json_t *ev = NULL;
  const char *msg = st->message;
  if (judged && oc_verdict_is_fail(j->v.kind) && (st->fail_mask & (1u << j->v.kind))) {
    ev = kc_judge_evidence(c, sb, j);
    kc_judge_result(j, st->ctx->result);
    if (guards) json_object_set_new(ev, "guard_damage", json_incref(guards));
  } else if (guards) {
    ev = json_pack("{s:s, s:O}", "verdict", "out_of_bounds", "guard_damage", guards);
    msg = "at this shape the kernel writes outside its tensors (guard zone changed)";
  }
  json_decref(guards);
  if (ev) {
    st->violations = 1;
    json_object_set_new(ev, "exposed_by", kc_exposed_by(sb, tr, seed));
    kc_gate_violation(st->ctx, json_pack("{s:s, s:o}", "message", msg, "evidence", ev));
  }
}

/* One run of trial tr at seed (rotation: its run of the specials generator
 * past the first, 0 for the first and for every other generator), recorded
 * in st, a violation reported. Returns the fewest rows of the inputs it
 * generated (0 when it did not run). */
static int64_t run_trial(struct trials_state *st, const struct kc_trial *tr, uint64_t seed,
                         int rotation) {
  const struct kc_contract *c = st->ctx->contract;
  struct kc_judgment *j = st->j;
  struct kc_contract_sb sb;
  int r = kc_trial_run(st->ctx, c, tr, seed, &sb, j);
  json_t *rec = json_pack("{s:s}", "generator", oc_gen_name((enum oc_gen)tr->gen));
  if (tr->transform != KC_TF_NONE)
    json_object_set_new(rec, "transform", json_string(kc_transform_name(tr->transform)));
  if (rotation) { /* which of the specials runs, and its seed (exposed_by's) */
    json_object_set_new(rec, "rotation", json_integer(rotation));
    json_object_set_new(rec, "seed", json_integer((json_int_t)seed));
  }
  if (r == 1 || r < 0) {
    run_not_judged(st, tr, rec, r, &sb);
    return 0;
  }
  st->runs++;
  if (tr->scalars) json_object_set_new(rec, "scalars", scalars_json(c, &sb));
  if (r == 2) { /* ran, but the oracle cannot judge it: guards still can */
    json_object_set_new(rec, "class", json_string("inconclusive"));
    json_object_set_new(rec, "reason", json_string(j->err));
    if (!st->first_err[0]) memcpy(st->first_err, j->err, sizeof st->first_err);
  } else {
    st->judged++;
    json_object_set_new(rec, "class", json_string(oc_verdict_name(j->v.kind)));
  }
  json_array_append_new(st->list, rec);
  report_run(st, tr, seed, r == 0, &sb);
  int64_t rows = fewest_rows(&sb);
  kc_contract_sb_free(&sb);
  return rows;
}

int kc_trials_gate(struct kc_gate_ctx *ctx, const struct kc_gate *g, const struct kc_trial *trials,
                   int ntrials, unsigned fail_mask, const char *message) {
  const struct kc_contract *c = ctx->contract;
  if (!c) return 0;
  json_object_set_new(ctx->result, "contract", json_string(c->where));
  if (!c->op || !c->profile_spec) {
    ctx->out.status = KC_GS_INCONCLUSIVE;
    json_object_set_new(
        ctx->result, "reason",
        json_string(c->op ? "the contract declares no profile" : "the contract declares no op"));
    return 0;
  }
  struct trials_state st = {
      .ctx = ctx, .fail_mask = fail_mask, .message = message, .j = calloc(1, sizeof *st.j)};
  if (!st.j) {
    ctx->out.status = KC_GS_ERROR;
    json_object_set_new(ctx->result, "error", json_string("out of host memory"));
    return 0;
  }
  st.list = json_array();
  for (int i = 0; i < ntrials && !st.violations; i++) {
    uint64_t seed = kc_trial_seed(g->id, i);
    int64_t rows = run_trial(&st, &trials[i], seed, 0);
    /* An input of fewer than 6 rows holds only some of the specials
     * generator's kinds at one seed (oracle/adversarial.h): the runs at
     * the seeds oc_specials_seed names give it, and every input with more
     * rows, the others. Inputs of 6 rows or more take this one run, as
     * before. */
    if (trials[i].gen == OC_GEN_SPECIALS)
      for (int k = 1; k < oc_specials_runs(rows) && !st.violations; k++)
        run_trial(&st, &trials[i], oc_specials_seed(seed, rows, k), k);
  }
  json_object_set_new(ctx->result, "trials", st.list);
  json_object_set_new(ctx->result, "runs", json_integer(st.runs));
  ctx->out.status = st.violations ? KC_GS_FAIL : st.judged ? KC_GS_PASS : KC_GS_INCONCLUSIVE;
  if (!st.judged && !st.violations)
    json_object_set_new(ctx->result, "reason",
                        json_string(st.first_err[0] ? st.first_err : "no trial applied"));
  free(st.j);
  return st.violations;
}
