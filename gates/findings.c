/* gates/findings.c — what becomes of a gate's typed result after a check:
 * its status goes into the gate's entry of the check record, and each
 * violation becomes a `violation` record (gate, severity, kernel, launch,
 * signature, grid, block, shared memory, seed, contract, then the gate's
 * message and evidence). A (gate, kernel, signature) is reported by the
 * first check that finds it; later checks of it count its violations as
 * repeats. Each record then goes to kc_report_violation (libkcheck/findings/finding.c),
 * which attributes it to a test, symbolises its stack, applies the
 * suppressions, writes it and prints the finding block. */
#include <stdatomic.h>

#include "bundle.h"
#include "contract.h"
#include "contract_options.h"
#include "core.h"
#include "finding.h"
#include "gate.h"
#include "launch.h"
#include "log.h"
#include "options.h"
#include "report.h"

const char *kc_gate_status_name(enum kc_gate_status s) {
  static const char *const names[] = {
#define KC_GATE_STATUS(id, name, meaning) [KC_GS_##id] = name,
#include "gate_status.def"
  };
  return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "unset";
}

void kc_gate_violation(struct kc_gate_ctx *ctx, json_t *details) {
  struct kc_gate_result *r = &ctx->out;
  if (KC_NEVER(!details)) return;
  if (r->nviolations == KC_GATE_MAX_VIOLATIONS) { /* the first ones say enough */
    json_decref(details);
    return;
  }
  r->violation[r->nviolations++] = details;
}

/* (gate, kernel, signature) keys already reported: open addressing over
 * 64-bit mixes, lock-free (checks may run on several threads). When full,
 * everything is reported: a repeat is better than a lost finding. */
#define SEEN_SLOTS 8192u
static _Atomic uint64_t seen[SEEN_SLOTS];

static uint64_t mix(uint64_t z) { /* splitmix64's finaliser */
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* 1 when key was reported before; else records it and returns 0. */
static int seen_before(uint64_t key) {
  key |= 1; /* 0 marks an empty slot */
  for (uint64_t i = 0, h = key % SEEN_SLOTS; i < SEEN_SLOTS; i++, h = (h + 1) % SEEN_SLOTS) {
    uint64_t cur = atomic_load_explicit(&seen[h], memory_order_acquire);
    if (!cur && atomic_compare_exchange_strong(&seen[h], &cur, key)) return 0;
    if (cur == key) return 1;
  }
  return 0;
}

/* Whether key was reported before, without recording it. */
static int seen_peek(uint64_t key) {
  key |= 1;
  for (uint64_t i = 0, h = key % SEEN_SLOTS; i < SEEN_SLOTS; i++, h = (h + 1) % SEEN_SLOTS) {
    uint64_t cur = atomic_load_explicit(&seen[h], memory_order_acquire);
    if (!cur) return 0;
    if (cur == key) return 1;
  }
  return 0;
}

/* The (gate, kernel, signature) key of a check's findings of g. */
static uint64_t finding_key(const struct kc_gate *g, const struct kc_gate_ctx *ctx) {
  int gate_index = 0;
  while (kc_gates[gate_index] && kc_gates[gate_index] != g)
    gate_index++;
  KC_ASSERT(kc_gates[gate_index] == g);
  return mix(ctx->li->signature ^ mix((uint64_t)gate_index << 32 | (uint32_t)ctx->li->k->id));
}

void kc_findings_reset(void) {
  for (unsigned i = 0; i < SEEN_SLOTS; i++)
    atomic_store(&seen[i], 0);
}

/* The violation record: where, then the gate's details (message,
 * evidence). Takes details. */
static json_t *violation_record(const struct kc_gate *g, const struct kc_gate_ctx *ctx,
                                json_t *details) {
  const struct kc_launch_info *li = ctx->li;
  json_t *rec = json_pack(
      "{s:s, s:s, s:i, s:s, s:s, s:I, s:o, s:[iii], s:[iii], s:i, s:I}", "gate", g->id, "severity",
      g->severity, "kernel", li->k->id, "kernel_name", li->k->demangled, "kernel_mangled",
      li->k->name, "launch", (json_int_t)li->seq, "signature", kc_json_hash(li->signature), "grid",
      li->grid[0], li->grid[1], li->grid[2], "block", li->block[0], li->block[1], li->block[2],
      "shmem", li->shmem, "seed", (json_int_t)kc_opt.seed);
  if (rec && g->needs_contract && ctx->contract) /* which contract the kernel broke */
    json_object_set_new(rec, "contract", json_string(ctx->contract->where));
  /* The gate's one-line contract for the finding block, and the launch as
   * captured (parameter bytes, pointers) for `kcheck repro`. */
  if (rec) {
    json_object_set_new(rec, "gate_contract", json_string(g->contract));
    json_object_set_new(rec, "launch_record", kc_launch_json(li));
    if (li->graph) json_object_set_new(rec, "graph", kc_graph_ref_json(li->graph));
  }
  if (rec) json_object_update(rec, details);
  json_decref(details);
  return rec;
}

void kc_findings_emit(json_t *rec) {
  /* Suppressions apply here: every violation record passes this point. */
  kc_report_violation(rec);
}

int kc_findings_report(const struct kc_gate *g, struct kc_gate_ctx *ctx) {
  struct kc_gate_result *r = &ctx->out;
  KC_ASSERT(r->status != KC_GS_UNSET); /* every gate sets a status */
  if (KC_NEVER(r->status == KC_GS_UNSET)) {
    KC_INTERNAL_ERROR("gate %s set no status", g->id);
    r->status = KC_GS_ERROR;
  }
  json_object_set_new(ctx->result, "status", json_string(kc_gate_status_name(r->status)));
  int repeats = 0;
  if (r->nviolations) {
    uint64_t key = finding_key(g, ctx);
    if (seen_before(key)) {
      repeats = r->nviolations;
      kc_finding_repeat(g->id, ctx->li->k->id, ctx->li->k->demangled, ctx->li->signature, repeats);
    }
  }
  for (int i = 0; i < r->nviolations; i++) {
    json_t *details = r->violation[i];
    r->violation[i] = NULL;
    if (repeats) {
      json_decref(details);
    } else {
      json_t *rec = violation_record(g, ctx, details);
      if (i == 0 && rec && r->bundle) json_object_update(rec, r->bundle);
      kc_findings_emit(rec);
    }
  }
  r->nviolations = 0;
  json_decref(r->bundle);
  r->bundle = NULL;
  return repeats;
}

void kc_findings_prepare(const struct kc_gate *g, struct kc_gate_ctx *ctx) {
  if (!ctx->out.nviolations || !kc_opt.repro_dir || !kc_opt.repro_dir[0] ||
      seen_peek(finding_key(g, ctx)))
    return;
  ctx->out.bundle = kc_bundle_write(ctx->li, ctx->shadow, g->id,
                                    g->needs_contract ? kc_contract_opt.contracts : NULL);
}
