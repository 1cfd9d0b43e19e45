/* test/unit/test_signature.c — the launch signature (kc_policy_signature):
 * kernel, grid, block, shared memory and the parameter bytes, with pointer
 * words (resolved or address-like) left out so that launches differing
 * only in buffers share it, and every shape-bearing difference changes it. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "policy.h"
#include "report.h"

struct kc_counters kc_count;
double kc_now_s(void) { return 0; }
/* serving.c writes budget_window records; none are read here. */
void kc_report_emit(const char *type, json_t *rec) {
  (void)type;
  json_decref(rec);
}

/* Parameters of a kernel (float *x, float *y, int n, int flags) plus a
 * parameter struct slot holding a stale stack address. */
struct params {
  uint64_t x, y;
  int32_t n, flags;
  uint64_t stale;
};

static uint64_t sig(struct kc_kernel *k, unsigned gx, unsigned bx, unsigned shmem, struct params p,
                    int resolve_ptrs) {
  struct kc_ptr ptrs[2] = {{0, p.x, p.x, 4096, 0}, {8, p.y, p.y, 4096, 0}};
  struct kc_launch_info li;
  memset(&li, 0, sizeof li);
  li.k = k;
  li.grid[0] = gx, li.grid[1] = li.grid[2] = 1;
  li.block[0] = bx, li.block[1] = li.block[2] = 1;
  li.shmem = shmem;
  li.param_buf = (unsigned char *)&p;
  li.param_size = sizeof p;
  li.ptrs = resolve_ptrs ? ptrs : NULL;
  li.nptrs = resolve_ptrs ? 2 : 0;
  return kc_policy_signature(&li);
}

int main(void) {
  struct kc_kernel k1 = {.id = 1}, k2 = {.id = 2};
  struct params p = {0x7f0000001000ull, 0x7f0000002000ull, 1024, 0, 0x7ffd12345678ull};
  uint64_t s = sig(&k1, 8, 128, 0, p, 1);
  CHECK(s == sig(&k1, 8, 128, 0, p, 1)); /* deterministic */
  /* Other buffers, another stale address: the same signature, whether the
   * pointers were resolved or only look like addresses. */
  struct params q = p;
  q.x = 0x7f00aaaa0000ull, q.y = 0x7f00bbbb0000ull, q.stale = 0x7ffd00000010ull;
  CHECK(sig(&k1, 8, 128, 0, q, 1) == s);
  CHECK(sig(&k1, 8, 128, 0, q, 0) == sig(&k1, 8, 128, 0, p, 0));
  /* What the kernel computes on changes it. */
  q = p;
  q.n = 1025;
  CHECK(sig(&k1, 8, 128, 0, q, 1) != s);
  q = p;
  q.flags = 1;
  CHECK(sig(&k1, 8, 128, 0, q, 1) != s);
  CHECK(sig(&k2, 8, 128, 0, p, 1) != s);
  CHECK(sig(&k1, 9, 128, 0, p, 1) != s);
  CHECK(sig(&k1, 8, 256, 0, p, 1) != s);
  CHECK(sig(&k1, 8, 128, 1024, p, 1) != s);
  /* A small value in a pointer slot is a shape, not an address. */
  q = p;
  q.stale = 4096;
  CHECK(sig(&k1, 8, 128, 0, q, 1) != s);
  /* No parameters at all. */
  struct kc_launch_info li;
  memset(&li, 0, sizeof li);
  li.k = &k1;
  li.grid[0] = li.block[0] = 1;
  uint64_t e = kc_policy_signature(&li);
  CHECK(e == kc_policy_signature(&li) && e != s);
  return CHECK_DONE("signature");
}
