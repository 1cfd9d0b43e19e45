/* libkcheck/base/san_rec.c — the Sanitizer route's records turned into the
 * access check's (san_rec.h), and where its library is looked for. */
#include "san_rec.h"

#include <assert.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

size_t kc_san_convert(const struct kc_san_rec *rec, size_t n, uint64_t fn_pc, struct kc_access *out,
                      struct kc_san_stats *st) {
  size_t m = 0;
  memset(st, 0, sizeof *st);
  for (size_t i = 0; i < n; i++) {
    /* a copy: out may be rec itself (same record size, converted in place) */
    const struct kc_san_rec r0 = rec[i], *r = &r0;
    unsigned rw = r->flags & (KC_SAN_READ | KC_SAN_WRITE);
    unsigned kind;
    /* A prefetch moves no value; a record with neither flag is not an
     * access the check can judge. */
    if ((r->flags & KC_SAN_PREFETCH) || (!rw && !(r->flags & KC_SAN_ATOMSYS))) {
      st->skipped++;
      continue;
    }
    if (rw == (KC_SAN_READ | KC_SAN_WRITE) || (r->flags & KC_SAN_ATOMSYS))
      kind = KC_ACC_ATOMIC;
    else
      kind = rw == KC_SAN_WRITE ? KC_ACC_WRITE : KC_ACC_READ;
    if (kind == KC_ACC_ATOMIC) r->global ? st->global_atomics++ : st->shared_atomics++;
    unsigned size = r->size > 16 ? 16 : r->size;
    assert(r->tid <= 0xffff);
    out[m].addr = r->addr;
    out[m].who = (r->tid & 0xffff) | kind << 16 | size << 20 | (r->global ? KC_ACC_GLOBAL : 0);
    out[m].epoch = r->epoch;
    out[m].block = r->block;
    out[m].site =
        r->pc >= fn_pc && r->pc - fn_pc < 0xffffffffull ? (unsigned)(r->pc - fn_pc) : 0xffffffffu;
    /* the record's slot: later in a thread's program order, later slot */
    out[m].seq = (unsigned)i;
    out[m].spare = 0;
    m++;
  }
  return m;
}

static int by_base(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

size_t kc_san_ranges_build(uint64_t *r, size_t n) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (r[2 * i + 1] > r[2 * i]) {
      r[2 * m] = r[2 * i];
      r[2 * m + 1] = r[2 * i + 1];
      m++;
    }
  qsort(r, m, 2 * sizeof *r, by_base);
  size_t k = 0;
  for (size_t i = 0; i < m; i++) {
    if (k && r[2 * i] <= r[2 * k - 1]) {
      if (r[2 * i + 1] > r[2 * k - 1]) r[2 * k - 1] = r[2 * i + 1];
      continue;
    }
    r[2 * k] = r[2 * i];
    r[2 * k + 1] = r[2 * i + 1];
    k++;
  }
  return k;
}

uint32_t kc_san_epoch_bar(uint32_t e) { return (e & 0xffff) == 0xffff ? e : e + 1; }
uint32_t kc_san_epoch_warp(uint32_t e) { return (e >> 16) == 0xffff ? e : e + 0x10000; }

const char *kc_san_unmodeled_text(uint32_t u) {
  /* the first, in order of how often kernels have it */
  if (!u) return "";
  if (u & KC_SAN_UNMODELED_MBARRIER) return "the kernel synchronises through mbarriers";
  if (u & KC_SAN_UNMODELED_NAMED_BARRIER)
    return "the kernel uses named or partial barriers (bar.sync with an id or a thread count)";
  if (u & KC_SAN_UNMODELED_ASYNC_COPY)
    return "the kernel uses asynchronous copies to shared memory";
  if (u & KC_SAN_UNMODELED_WGMMA) return "the kernel uses warpgroup MMAs";
  return "the kernel uses cluster barriers";
}

static int add(char (*out)[512], int n, int max, const char *dir, const char *tail) {
  if (!dir || !dir[0] || n >= max) return n;
  int w = snprintf(out[n], sizeof out[n], "%s%s", dir, tail);
  return w > 0 && (size_t)w < sizeof out[n] ? n + 1 : n;
}

int kc_san_lib_candidates(const char *opt, const char *cuda_home, const char *pip_dir,
                          char (*out)[512], int max) {
  int n = 0;
  if (opt && opt[0]) {
    struct stat sb;
    int dir = stat(opt, &sb) == 0 && S_ISDIR(sb.st_mode);
    n = add(out, n, max, opt, dir ? "/libsanitizer-public.so" : "");
  }
  n = add(out, n, max, cuda_home, "/compute-sanitizer/libsanitizer-public.so");
  if (!cuda_home || strcmp(cuda_home, "/usr/local/cuda"))
    n = add(out, n, max, "/usr/local/cuda", "/compute-sanitizer/libsanitizer-public.so");
  n = add(out, n, max, pip_dir, "/libsanitizer-public.so");
  return n;
}

int kc_san_under_tool(void) {
  const char *pre = getenv("LD_PRELOAD");
  if (getenv("NV_SANITIZER_INJECTION_PORT_BASE")) return 1;
  if (pre && strstr(pre, "TreeLauncher")) return 1;
  void *h = dlopen("libsanitizer-collection.so", RTLD_LAZY | RTLD_NOLOAD);
  if (h) dlclose(h);
  return h != NULL;
}

void *kc_san_lib_open(const char *opt, const char *cuda_home, const char *pip_dir, char *state,
                      size_t state_len) {
  char cand[6][512];
  int n = kc_san_lib_candidates(opt, cuda_home, pip_dir, cand, 6);
  for (int i = 0; i < n; i++) {
    void *h = dlopen(cand[i], RTLD_NOW | RTLD_LOCAL);
    if (h) {
      snprintf(state, state_len, "%s", cand[i]);
      return h;
    }
  }
  snprintf(state, state_len,
           "libsanitizer-public.so was not found (sanitizer_lib=PATH, or the CUDA toolkit's "
           "compute-sanitizer folder); tried %d path(s), first %s",
           n, n ? cand[0] : "-");
  return NULL;
}

unsigned kc_log_retry_stride(uint64_t count, unsigned cap, unsigned stride, uint64_t blocks) {
  assert(cap > 0 && stride > 0);
  /* Fewer blocks next time: enough to fit, with room for blocks that do
   * more than the average. 0 when even one block in `blocks` is too many. */
  uint64_t s = (uint64_t)stride * (2 * (count / cap + 1));
  return s < blocks ? (unsigned)s : 0;
}
