/* libkcheck/core/api.c — the exported public API of include/kcheck.h. */
#include "../../include/kcheck.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "core.h"
#include "devmem.h"
#include "export.h"
#include "finding.h"
#include "guardzone.h"
#include "options.h"
#include "report.h"
#include "staging.h"
#include "suppress.h"
#include "version.h"

KC_EXPORT const char *kcheck_version(void) { return KCHECK_VERSION; }

KC_EXPORT void kcheck_print_options(void) { kc_options_print_help(stderr); }

KC_EXPORT int kcheck_check_options(const char *spec) {
  /* It parses into the live options: never in a process kcheck runs in. */
  if (kc_core_initialized) return -1;
  int fatal = kc_options_validate(spec);
  /* the suppressions files, as a run loads them (each problem is fatal) */
  if (!fatal) {
    kc_options_fatal_reset();
    kc_suppress_load(kc_opt.suppressions);
    fatal = kc_options_fatal_count();
  }
  return fatal;
}

KC_EXPORT void kcheck_set_test(const char *id) {
  kc_finding_set_test(id);
  /* A `test` record per test: `kcheck report --junit` lists tests that ran
   * clean too, those before the process's first CUDA call included. */
  if (id && *id) kc_report_test(id);
}

KC_EXPORT const char *kcheck_report_path(void) { return kc_report_path(); }
KC_EXPORT void kcheck_flush(void) {
  kc_findings_drain(0);
  kc_report_flush();
}
KC_EXPORT int kcheck_option(const char *name, char *buf, unsigned long n) {
  if (!name) return -1;
  if (kc_core_activate) kc_core_activate(); /* the options are parsed on activation */
  json_t *all = kc_options_to_json();
  json_t *v = all ? json_object_get(all, name) : NULL;
  int len = -1;
  if (v) {
    char *text = json_is_string(v) ? NULL : json_dumps(v, JSON_ENCODE_ANY);
    const char *s = json_is_string(v) ? json_string_value(v) : text;
    len = snprintf(buf, buf ? n : 0, "%s", s ? s : "");
    free(text);
  }
  json_decref(all);
  return len;
}

KC_EXPORT int kcheck_torch_pool(unsigned long long bytes, int check, char *why, unsigned long n) {
  if (kc_core_activate) kc_core_activate(); /* the budget is an option */
  /* The staging buffer kept between checks is a cache (the next check
   * makes it again): under the budget it yields to the binding's re-runs,
   * which would otherwise find no room once it has grown. */
  if (check && bytes > kc_devmem_room()) kc_staging_release();
  int ok = kc_devmem_hold(KC_DM_torch_pool, bytes, check);
  if (why && n) {
    const char *r = ok ? NULL : kc_devmem_refused();
    snprintf(why, n, "%s", r ? r : "");
  }
  return ok ? 0 : -1;
}

/* ---- the guard-zone allocator (libkcheck/base/guardzone.c) ---- */

KC_EXPORT void *kcheck_guard_alloc(unsigned long size, int device, void *stream) {
  if (kc_core_activate) kc_core_activate(); /* the driver table is filled on activation */
  return kc_gz_alloc(size, device, (CUstream)stream);
}

KC_EXPORT void kcheck_guard_free(void *ptr, unsigned long size, int device, void *stream) {
  (void)size; /* the table knows it */
  kc_gz_free(ptr, device, (CUstream)stream);
}

KC_EXPORT int kcheck_guard_fill(int byte) { return kc_gz_fill(byte); }

KC_EXPORT long kcheck_guard_live(void) { return (long)kc_gz_live(); }

KC_EXPORT long kcheck_guard_check(char *buf, unsigned long n) {
  if (kc_core_activate) kc_core_activate();
  struct kc_gz_damage d[16];
  CUresult err;
  long found = kc_gz_check(d, sizeof d / sizeof *d, &err);
  json_t *j;
  if (found < 0) {
    j = json_pack("{s:i}", "error", (int)err);
  } else {
    j = json_array();
    for (long i = 0; i < found && i < (long)(sizeof d / sizeof *d); i++)
      json_array_append_new(j, kc_gz_damage_json(&d[i]));
  }
  char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
  if (buf && n) snprintf(buf, n, "%s", text ? text : "[]");
  free(text);
  json_decref(j);
  return found;
}
