/* test/fuzz/fuzz_contract.c — libFuzzer harness for the contract parser and
 * the binding of a contract to a launch's parameter bytes. Input: YAML text,
 * then (after the last NUL byte, if any) the parameter bytes every parsed
 * contract is bound to. Built by `make fuzz` with clang's
 * -fsanitize=fuzzer,address,undefined (the float-to-int cast in binding was
 * found this way). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "contract.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kc_verbosity = -1;
  size_t text_len = size;
  const uint8_t *nul = memchr(data, 0, size);
  const uint8_t *params = NULL;
  size_t nparams_bytes = 0;
  if (nul) {
    text_len = (size_t)(nul - data);
    params = nul + 1;
    nparams_bytes = size - text_len - 1;
  }
  char *text = malloc(text_len + 1);
  if (!text) return 0;
  memcpy(text, data, text_len);
  text[text_len] = 0;
  struct kc_contract_set set = {0};
  kc_contract_parse_text(text, text_len, "fuzz.yaml", &set);
  for (int i = 0; i < set.n; i++) {
    struct kc_contract_binding b;
    char err[256];
    unsigned char buf[512] = {0};
    memcpy(buf, params ? params : (const uint8_t *)"",
           nparams_bytes < sizeof buf ? nparams_bytes : sizeof buf);
    kc_contract_bind(set.c[i], buf, sizeof buf, NULL, set.c[i]->nparams, &b, err, sizeof err);
  }
  kc_contract_set_free(&set);
  free(text);
  return 0;
}
