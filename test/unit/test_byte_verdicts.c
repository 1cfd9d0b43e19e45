/* test/unit/test_byte_verdicts.c — the byte verdicts the coverage,
 * immutability and bounds gates share with the op level (kcheck.h):
 * counts in units, first and last, the equal-span fast path. */
#include <string.h>

#include "../../include/kcheck.h"
#include "check.h"

int main(void) {
  static unsigned char a[10000], b[10000];
  long long first = 0, last = 0;
  memset(a, 0x11, sizeof a);
  memcpy(b, a, sizeof b);
  CHECK(kcheck_bytes_changed(a, b, sizeof a, 1, &first, &last) == 0);
  CHECK(first == -1 && last == -1);
  b[5000] = 0;
  b[9999] = 0;
  CHECK(kcheck_bytes_changed(a, b, sizeof a, 1, &first, &last) == 2);
  CHECK(first == 5000 && last == 9999);
  /* Units of 4 bytes: byte 5000 is in element 1250, 9999 in 2499. */
  CHECK(kcheck_bytes_changed(a, b, sizeof a, 4, &first, NULL) == 2 && first == 1250);

  /* Coverage: element 1 kept both poisons; element 2 was written with
   * different values (a nondeterministic kernel). */
  unsigned char r1[12], r2[12];
  memset(r1, 0xA5, sizeof r1);
  memset(r2, 0x5A, sizeof r2);
  memset(r1, 0, 4), memset(r2, 0, 4);
  memset(r1 + 8, 1, 4), memset(r2 + 8, 2, 4);
  CHECK(kcheck_bytes_unwritten(r1, r2, 12, 4, 0xA5, 0x5A, 1, &first, &last) == 1);
  CHECK(first == 1 && last == 1);
  /* A deterministic kernel: a unit that differs between the runs. */
  CHECK(kcheck_bytes_unwritten(r1, r2, 12, 4, 0xA5, 0x5A, 0, &first, &last) == 2);
  CHECK(first == 1 && last == 2);

  /* Bounds: a guard zone of 0xCB with two stores. */
  unsigned char g[256];
  memset(g, 0xCB, sizeof g);
  CHECK(kcheck_bytes_not_fill(g, sizeof g, 0xCB, &first, &last) == 0 && first == -1);
  g[3] = g[200] = 0;
  CHECK(kcheck_bytes_not_fill(g, sizeof g, 0xCB, &first, &last) == 2);
  CHECK(first == 3 && last == 200);
  CHECK(kcheck_bytes_not_fill(g, 0, 0xCB, &first, &last) == 0 && last == -1);
  return CHECK_DONE("byte_verdicts");
}
