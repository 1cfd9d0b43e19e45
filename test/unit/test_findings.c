/* test/unit/test_findings.c — what the runner does with a gate's typed
 * result (gates/findings.c): the status name in the gate's entry, one
 * violation record per violation with where it happened and the gate's
 * details, a (gate, kernel, signature) reported by the first check only
 * (later ones are counted as repeats), and a forked child starting over. */
#include <string.h>

#include "bundle.h"
#include "check.h"
#include "contract_options.h"
#include "core.h"
#include "finding.h"
#include "gate.h"
#include "launch.h"
#include "report.h"

/* What findings.c takes from the core and the registry. */
static json_t *reported[16];
static int nreported;
void kc_report_violation(json_t *rec) {
  if (nreported < 16)
    reported[nreported++] = rec;
  else
    json_decref(rec);
}
json_t *kc_json_hash(uint64_t v) { return json_integer((json_int_t)v); }
/* The finding pipeline's side (libkcheck/findings/finding.c, libkcheck/capture.c). */
static int repeats_seen;
void kc_finding_repeat(const char *gate, long kernel, const char *kernel_name,
                       unsigned long long signature, int n) {
  (void)gate, (void)kernel, (void)kernel_name, (void)signature;
  repeats_seen += n;
}
json_t *kc_launch_json(const struct kc_launch_info *li) {
  (void)li;
  return json_object();
}
/* Replay bundles (libkcheck/exec/bundle.c): counted, and a marker for the record. */
struct kc_contract_options kc_contract_opt;
static int bundles_written;
json_t *kc_bundle_write(const struct kc_launch_info *li, const struct kc_shadow *sh,
                        const char *gate, const char *contracts) {
  (void)li, (void)sh, (void)contracts;
  bundles_written++;
  return json_pack("{s:s}", "bundle", gate);
}
static const struct kc_gate g_race = {
    .id = "race", .severity = "error", .contract = "re-runs agree"};
static const struct kc_gate g_bounds = {
    .id = "bounds", .severity = "error", .needs_contract = 1, .contract = "guards intact"};
const struct kc_gate *const kc_gates[] = {&g_race, &g_bounds, NULL};

static int report(const struct kc_gate *g, struct kc_launch_info *li, enum kc_gate_status st,
                  int nviol, json_t **entry) {
  struct kc_gate_ctx ctx = {li, NULL, NULL, json_object(), {st, 0, {NULL}, NULL}};
  for (int i = 0; i < nviol; i++)
    kc_gate_violation(&ctx, json_pack("{s:s, s:{s:i}}", "message", "differs", "evidence", "i", i));
  kc_findings_prepare(g, &ctx); /* what the runner does before restoring memory */
  int repeats = kc_findings_report(g, &ctx);
  if (entry)
    *entry = ctx.result;
  else
    json_decref(ctx.result);
  return repeats;
}

static void forget(void) {
  for (int i = 0; i < nreported; i++)
    json_decref(reported[i]);
  nreported = 0;
}

int main(void) {
  struct kc_kernel k = {.id = 3, .name = "_Z1kv", .demangled = "k()"};
  struct kc_launch_info li;
  memset(&li, 0, sizeof li);
  li.k = &k, li.seq = 41, li.signature = 0xabc;
  li.grid[0] = 2, li.block[0] = 64;
  json_t *entry = NULL;

  /* Statuses are named in the gate's entry. */
  CHECK(report(&g_race, &li, KC_GS_PASS, 0, &entry) == 0 && nreported == 0);
  CHECK(!strcmp(json_string_value(json_object_get(entry, "status")), "pass"));
  json_decref(entry);
  CHECK(!strcmp(kc_gate_status_name(KC_GS_NOT_RUN), "not run") &&
        !strcmp(kc_gate_status_name(KC_GS_INCONCLUSIVE), "inconclusive"));
  /* an op-level gate's kernel-level run (layouts) writes the op level's name */
  CHECK(!strcmp(kc_gate_status_name(KC_GS_NOT_APPLICABLE), "not_applicable"));

  /* First check with violations: every one reported, with where. */
  CHECK(report(&g_race, &li, KC_GS_FAIL, 2, &entry) == 0 && nreported == 2);
  CHECK(!strcmp(json_string_value(json_object_get(entry, "status")), "fail"));
  json_decref(entry);
  json_t *v = reported[1];
  CHECK(!strcmp(json_string_value(json_object_get(v, "gate")), "race"));
  CHECK(json_integer_value(json_object_get(v, "kernel")) == 3);
  CHECK(json_integer_value(json_object_get(v, "launch")) == 41);
  CHECK(json_integer_value(json_object_get(v, "signature")) == 0xabc);
  CHECK(!strcmp(json_string_value(json_object_get(v, "kernel_name")), "k()"));
  CHECK(!strcmp(json_string_value(json_object_get(v, "message")), "differs"));
  CHECK(json_integer_value(json_object_get(json_object_get(v, "evidence"), "i")) == 1);
  CHECK(!json_object_get(v, "contract")); /* a gate without contract */
  forget();

  /* The same (gate, kernel, signature) again: repeats, nothing reported. */
  li.seq = 42;
  CHECK(report(&g_race, &li, KC_GS_FAIL, 3, NULL) == 3 && nreported == 0);
  /* Another gate, signature or kernel is another finding. */
  CHECK(report(&g_bounds, &li, KC_GS_FAIL, 1, NULL) == 0 && nreported == 1);
  li.signature = 0xabd;
  CHECK(report(&g_race, &li, KC_GS_FAIL, 1, NULL) == 0 && nreported == 2);
  k.id = 4;
  CHECK(report(&g_race, &li, KC_GS_FAIL, 1, NULL) == 0 && nreported == 3);
  forget();

  /* A forked child's report has none of the parent's findings. */
  kc_findings_reset();
  k.id = 3, li.signature = 0xabc;
  CHECK(report(&g_race, &li, KC_GS_FAIL, 1, NULL) == 0 && nreported == 1);
  forget();

  /* More violations than a result holds: the first ones are kept. */
  struct kc_gate_ctx ctx = {&li, NULL, NULL, json_object(), {KC_GS_FAIL, 0, {NULL}, NULL}};
  for (int i = 0; i < KC_GATE_MAX_VIOLATIONS + 4; i++)
    kc_gate_violation(&ctx, json_object());
  CHECK(ctx.out.nviolations == KC_GATE_MAX_VIOLATIONS);
  li.signature = 0x999;
  CHECK(kc_findings_report(&g_race, &ctx) == 0 && nreported == KC_GATE_MAX_VIOLATIONS);
  json_decref(ctx.result);
  forget();

  /* repro_dir: one bundle per new finding, on its first record only; none
   * for a repeat, none without the option. */
  CHECK(bundles_written == 0);
  kc_opt.repro_dir = "bundles";
  li.signature = 0x777;
  CHECK(report(&g_bounds, &li, KC_GS_FAIL, 2, NULL) == 0 && nreported == 2);
  CHECK(bundles_written == 1);
  CHECK(json_is_string(json_object_get(reported[0], "bundle")));
  CHECK(!json_object_get(reported[1], "bundle"));
  CHECK(report(&g_bounds, &li, KC_GS_FAIL, 1, NULL) == 1 && bundles_written == 1);
  forget();
  kc_opt.repro_dir = "";
  li.signature = 0x778;
  CHECK(report(&g_bounds, &li, KC_GS_FAIL, 1, NULL) == 0 && bundles_written == 1);
  forget();
  return CHECK_DONE("findings");
}
