/* test/unit/test_bug_sites.c — the code sites violations are grouped by
 * (libkcheck/findings/bug.c): the user's Python frames, else the first host
 * frames outside the interpreter and the CUDA runtime (the shared
 * libcudart, the static one linked into the program, nvcc's launch stubs),
 * so a kernel launched from one line is one bug and the site names that
 * line, not the runtime's entry point. */
#include <string.h>

#include "bug.h"
#include "check.h"

static json_t *frame(const char *module, const char *symbol, const char *offset) {
  return json_pack("{s:s, s:s, s:s}", "module", module, "symbol", symbol, "offset", offset);
}

/* The host stack of a launch through the static runtime (nvcc's default):
 * the runtime's frames are in the program's own module. */
static json_t *static_runtime_stack(const char *caller_offset) {
  json_t *host = json_array();
  json_array_append_new(host, frame("/x/races", "libcudart_static_4d8b33a1", "0x12294"));
  json_array_append_new(host, frame("/x/races", "cudaLaunchKernel", "0x74773"));
  json_array_append_new(host, frame("/x/races", "__device_stub__Z16racy_last_writerPii", "0x9a0"));
  json_array_append_new(host, frame("/x/races", "run_last_writer()", caller_offset));
  json_array_append_new(host, frame("/x/races", "main", "0x9f10"));
  return json_pack("{s:o}", "host", host);
}

int main(void) {
  char label[256];
  json_t *st = static_runtime_stack("0xa1b0");
  kc_site_label(st, label, sizeof label);
  CHECK(!strncmp(label, "run_last_writer()", strlen("run_last_writer()")));

  /* the shared runtime and the driver are skipped too */
  json_t *host = json_array();
  json_array_append_new(host, frame("/usr/lib/libcudart.so.13", "", "0x1376d"));
  json_array_append_new(host, frame("/usr/lib/libcuda.so.1", "cuLaunchKernel", "0x2000"));
  json_array_append_new(host, frame("/x/app", "launch_sum", "0x1200"));
  json_t *st2 = json_pack("{s:o}", "host", host);
  kc_site_label(st2, label, sizeof label);
  CHECK(!strncmp(label, "launch_sum", strlen("launch_sum")));

  /* two launches of one kernel from one line: one bug; from another
   * caller: another bug */
  int idx = -1;
  json_t *r1 =
      json_pack("{s:s, s:s, s:O}", "gate", "race", "kernel_name", "racy_last_writer", "stack", st);
  json_t *r2 = json_pack("{s:s, s:s, s:o}", "gate", "race", "kernel_name", "racy_last_writer",
                         "stack", static_runtime_stack("0xa1b0"));
  json_t *r3 = json_pack("{s:s, s:s, s:o}", "gate", "race", "kernel_name", "racy_last_writer",
                         "stack", static_runtime_stack("0xb2c0"));
  CHECK(kc_bug_note(r1, 0, &idx) == 1);
  CHECK(kc_bug_note(r2, 0, &idx) == 2);
  CHECK(kc_bug_note(r3, 0, &idx) == 1);
  CHECK(strcmp(json_string_value(json_object_get(r1, "bug")),
               json_string_value(json_object_get(r3, "bug"))) != 0);
  /* determinism re-runs what race re-runs: its record of the same kernel
   * and site is the same bug (the third record of it) */
  json_t *r5 = json_pack("{s:s, s:s, s:O}", "gate", "determinism", "kernel_name",
                         "racy_last_writer", "stack", st);
  CHECK(kc_bug_note(r5, 0, &idx) == 3);
  CHECK(!strcmp(json_string_value(json_object_get(r1, "bug")),
                json_string_value(json_object_get(r5, "bug"))));
  json_decref(r5);
  /* an access-level race's evidence names two threads (first, second)
   * of one launch: one site, the launch's, not two empty ones */
  json_t *r4 = json_pack("{s:s, s:s, s:O, s:{s:{s:s, s:i}, s:{s:s, s:i}}}", "gate", "race",
                         "kernel_name", "kc_matmul", "stack", st, "evidence", "first", "kind",
                         "write", "thread", 0, "second", "kind", "write", "thread", 1);
  CHECK(kc_bug_note(r4, 0, &idx) == 1);
  json_t *sites = json_object_get(r4, "sites");
  CHECK(json_array_size(sites) == 1 &&
        !strncmp(json_string_value(json_array_get(sites, 0)), "run_last_writer()", 17));
  json_decref(r1), json_decref(r2), json_decref(r3), json_decref(r4), json_decref(st),
      json_decref(st2);
  return CHECK_DONE("bug_sites");
}
