/* test/oracle/test_ops.c — the ops table of oracle/ops.def: every row is
 * found by its name (any case) and its aliases, ids index the table, the
 * elementwise rows are enum oc_op in order with the same names and arity,
 * and the reduce/softmax kinds name the oracle's own enums. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "oracle.h"

int main(void) {
  int before = failures;
  int ew = 0;
  for (int i = 0; i < OC_ID_COUNT; i++) {
    const struct oc_op_info *r = oc_op_by_id((enum oc_opid)i);
    CHECK(r && r->id == (enum oc_opid)i, "row %d has id %d", i, r ? (int)r->id : -1);
    if (!r) continue;
    CHECK(oc_op_find(r->name) == r, "find %s", r->name);
    char up[32];
    snprintf(up, sizeof up, "%s", r->name);
    for (char *p = up; *p; p++)
      if (*p >= 'a' && *p <= 'z') *p = (char)(*p - 'a' + 'A');
    CHECK(oc_op_find(up) == r, "find %s", up);
    /* at most the 8 input tensors a judgment takes (gates/judge.h) */
    CHECK(r->arity >= 1 && r->arity <= 8, "%s arity %d", r->name, r->arity);
    CHECK(strcmp(oc_op_class_name(r->cls), "?"), "%s class", r->name);
    if (r->cls == OC_CLASS_ELEMENTWISE) {
      CHECK(r->kind == ew, "%s is oc_op %d, expected %d", r->name, r->kind, ew);
      CHECK(!strcmp(oc_op_name((enum oc_op)r->kind), r->name), "%s name", r->name);
      CHECK(oc_op_arity((enum oc_op)r->kind) == r->arity, "%s arity", r->name);
      CHECK(oc_op_parse(r->name) == r->kind, "%s parse", r->name);
      ew++;
    } else {
      CHECK(oc_op_parse(r->name) == -1, "%s is not elementwise", r->name);
    }
  }
  CHECK(ew == OC_OP_COUNT, "%d elementwise rows, enum oc_op has %d", ew, OC_OP_COUNT);
  CHECK(oc_op_find("gelu") == oc_op_by_id(OC_ID_GELU_ERF), "alias gelu");
  CHECK(oc_op_find("swish") == oc_op_by_id(OC_ID_SILU), "alias swish");
  CHECK(!oc_op_find("nope") && !oc_op_find(NULL) && !oc_op_by_id(OC_ID_COUNT), "unknown");
  CHECK(oc_op_find("norm2")->kind == OC_RED_NORM2 && oc_op_find("max")->kind == OC_RED_MAX,
        "reduce kinds");
  CHECK(oc_op_find("logsumexp")->kind == OC_LOGSUMEXP && oc_op_find("softmax")->kind == OC_SOFTMAX,
        "softmax kinds");
  CHECK(oc_op_find("matmul")->arity == 2 && oc_op_find("attention")->arity == 3 &&
            oc_op_find("gated_delta")->arity == 5,
        "arity of the non-elementwise ops");
  printf("%s ops table: %d ops, %d elementwise\n", STATUS(before), (int)OC_ID_COUNT, ew);
  printf("%s test_ops: %ld checks, %d failures\n", STATUS(0), checks, failures);
  return failures != 0;
}
