/* test/fuzz/fuzz_expr.c — libFuzzer harness for the expression language:
 * compile (integer and boolean modes) and evaluate. Input: 24 bytes of
 * scalar values (n, m, k), then the expression text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "contract.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int lookup(void *ctx, const char *name, size_t len) {
  (void)ctx;
  static const char *const names[] = {"n", "m", "k"};
  for (int i = 0; i < 3; i++)
    if (len == 1 && name[0] == names[i][0]) return i;
  return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int64_t vars[3] = {0};
  size_t head = size < sizeof vars ? size : sizeof vars;
  memcpy(vars, data, head);
  char *text = malloc(size - head + 1);
  if (!text) return 0;
  memcpy(text, data + head, size - head);
  text[size - head] = 0;
  for (int mode = 0; mode < 2; mode++) {
    char err[256];
    int pos = 0;
    struct kc_contract_expr *e =
        kc_contract_expr_compile(text, mode, lookup, NULL, err, sizeof err, &pos);
    if (!e) continue;
    int64_t out = 0;
    kc_contract_expr_eval(e, vars, &out, err, sizeof err);
    kc_contract_expr_free(e);
  }
  free(text);
  return 0;
}
