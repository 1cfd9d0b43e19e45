/* libkcheck/api.c — the exported public API of include/kcheck.h. */
#include "../include/kcheck.h"

#include <stdio.h>

#include "finding.h"
#include "options.h"
#include "report.h"
#include "version.h"

#define KC_EXPORT __attribute__((visibility("default")))

KC_EXPORT const char *kcheck_version(void) { return KCHECK_VERSION; }

KC_EXPORT void kcheck_print_options(void) { kc_options_print_help(stderr); }

KC_EXPORT void kcheck_set_test(const char *id) {
  kc_finding_set_test(id);
  /* A `test` record per test: `kcheck report --junit` lists tests that ran
   * clean too. */
  if (id && *id) kc_report_emit("test", json_pack("{s:s}", "id", id));
}

KC_EXPORT const char *kcheck_report_path(void) { return kc_report_path(); }
