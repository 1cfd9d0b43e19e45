/* test/unit/check.h — minimal assertions for the C unit tests: print the
 * expression, file and line, count failures, exit nonzero at the end. */
#ifndef KC_TEST_CHECK_H
#define KC_TEST_CHECK_H
#include <stdio.h>

static int check_failures, check_count;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    check_count++;                                                                                 \
    if (!(cond)) {                                                                                 \
      check_failures++;                                                                            \
      fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                              \
    }                                                                                              \
  } while (0)

#define CHECK_DONE(name)                                                                           \
  (printf("%s: %d checks, %d failed\n", (name), check_count, check_failures), check_failures != 0)

#endif
