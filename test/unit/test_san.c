/* test/unit/test_san.c — the Sanitizer route's parts that need no driver
 * (libkcheck/base/san_rec.h, cubin_vars.h, sass_atomics.h, ptx_source.h):
 * record conversion, barrier and warp epochs, the over-capacity retry
 * stride, finding and failing to find libsanitizer-public.so, standing
 * down under compute-sanitizer, module variables and the cubin of a
 * fatbin, and float atomics read from SASS of every architecture kcheck
 * ships callbacks for (committed cubins, test/unit/data/sass_atomics.cu). */
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cubin_cache.h"
#include "cubin_vars.h"
#include "ptx_source.h"
#include "san_rec.h"
#include "sass_atomics.h"

static struct kc_san_rec rec(uint64_t addr, uint64_t pc, unsigned tid, unsigned block,
                             unsigned epoch, unsigned flags, unsigned size, int global) {
  struct kc_san_rec r = {addr,           pc, tid, block, epoch, (uint16_t)flags, (uint8_t)size,
                         (uint8_t)global};
  return r;
}
#define KIND(a) (((a).who >> 16) & 0xf)
#define SIZE(a) (((a).who >> 20) & 0x1f)

static void test_convert(void) {
  struct kc_san_rec r[6] = {
      rec(0x1000, 0x7f0000000040, 5, 2, 1 | 3u << 16, KC_SAN_READ, 4, 1),
      rec(0x10, 0x7f0000000050, 33, 2, 2, KC_SAN_WRITE, 16, 0),
      rec(0x1000, 0x7f0000000060, 6, 3, 0, KC_SAN_READ | KC_SAN_WRITE, 4, 1),
      rec(0x1000, 0x7f0000000070, 6, 3, 0, KC_SAN_ATOMSYS, 8, 1),
      rec(0x2000, 0x7f0000000080, 6, 3, 0, KC_SAN_PREFETCH | KC_SAN_READ, 4, 1),
      rec(0x2000, 0x10, 7, 3, 0, KC_SAN_WRITE, 4, 1), /* pc below the function */
  };
  struct kc_san_stats st;
  /* in place: the records are struct kc_access sized */
  struct kc_access *out = (struct kc_access *)r;
  size_t n = kc_san_convert(r, 6, 0x7f0000000000, out, &st);
  CHECK(n == 5);
  CHECK(st.skipped == 1 && st.global_atomics == 2 && st.shared_atomics == 0);
  CHECK(out[0].addr == 0x1000 && KIND(out[0]) == KC_ACC_READ && SIZE(out[0]) == 4 &&
        (out[0].who & KC_ACC_GLOBAL) && (out[0].who & 0xffff) == 5 && out[0].block == 2 &&
        out[0].epoch == (1 | 3u << 16) && out[0].site == 0x40 && out[0].seq == 0);
  CHECK(KIND(out[1]) == KC_ACC_WRITE && SIZE(out[1]) == 16 && !(out[1].who & KC_ACC_GLOBAL) &&
        (out[1].who & 0xffff) == 33 && out[1].site == 0x50);
  CHECK(KIND(out[2]) == KC_ACC_ATOMIC && KIND(out[3]) == KC_ACC_ATOMIC);
  CHECK(out[2].seq < out[3].seq); /* program order kept */
  CHECK(out[4].site == 0xffffffffu && KIND(out[4]) == KC_ACC_WRITE);
}

static void test_epochs(void) {
  CHECK(kc_san_epoch_bar(0) == 1);
  CHECK(kc_san_epoch_bar(0xffff) == 0xffff); /* saturates, never carries */
  CHECK(kc_san_epoch_warp(5) == (5 | 1u << 16));
  CHECK(kc_san_epoch_warp(0xffffu << 16) == 0xffffu << 16);
  CHECK(kc_san_epoch_bar(0xffffu << 16) == (0xffffu << 16 | 1));
}

static void test_unmodeled(void) {
  CHECK(!strcmp(kc_san_unmodeled_text(0), ""));
  CHECK(strstr(kc_san_unmodeled_text(KC_SAN_UNMODELED_NAMED_BARRIER), "named or partial"));
  /* mbarriers first: warp-specialised kernels have both */
  CHECK(strstr(kc_san_unmodeled_text(KC_SAN_UNMODELED_MBARRIER | KC_SAN_UNMODELED_NAMED_BARRIER),
               "mbarrier"));
  CHECK(strstr(kc_san_unmodeled_text(KC_SAN_UNMODELED_CLUSTER), "cluster"));
  /* the device reads the same layout the host writes */
  CHECK(sizeof(struct kc_san_cfg) % 8 == 0 && sizeof(struct kc_san_rec) == 32);
}

static void test_guard_ranges(void) {
  /* unsorted, one empty, two overlapping, two touching */
  uint64_t r[] = {0x5000, 0x6000, 0x1000, 0x2000, 0x3000, 0x3000,
                  0x1800, 0x2800, 0x2800, 0x2900, 0x9000, 0x9100};
  size_t n = kc_san_ranges_build(r, 6);
  CHECK(n == 3);
  CHECK(r[0] == 0x1000 && r[1] == 0x2900); /* merged: overlap and touch */
  CHECK(r[2] == 0x5000 && r[3] == 0x6000);
  CHECK(r[4] == 0x9000 && r[5] == 0x9100);
  /* inside, at both ends */
  CHECK(!kc_san_outside(r, (uint32_t)n, 0x1000, 4));
  CHECK(!kc_san_outside(r, (uint32_t)n, 0x28fc, 4));
  CHECK(!kc_san_outside(r, (uint32_t)n, 0x9000, 0x100));
  /* one byte past the end, straddling the end, below the first, between */
  CHECK(kc_san_outside(r, (uint32_t)n, 0x2900, 1));
  CHECK(kc_san_outside(r, (uint32_t)n, 0x28fe, 4));
  CHECK(kc_san_outside(r, (uint32_t)n, 0xfff, 1));
  CHECK(kc_san_outside(r, (uint32_t)n, 0x4000, 16));
  CHECK(kc_san_outside(r, (uint32_t)n, 0x9100, 1));
  CHECK(kc_san_outside(r, (uint32_t)n, UINT64_MAX - 3, 4));
  /* an empty table holds nothing */
  CHECK(kc_san_outside(r, 0, 0x1000, 4));
  CHECK(kc_san_ranges_build(r, 0) == 0);
}

static void test_retry(void) {
  /* 3000 records wanted of 1000, every block: 1 block in 8 */
  CHECK(kc_log_retry_stride(3000, 1000, 1, 1024) == 8);
  /* from a stride already: it multiplies */
  CHECK(kc_log_retry_stride(1500, 1000, 8, 1024) == 32);
  /* no stride smaller than the grid fits: 0, a recorded skip */
  CHECK(kc_log_retry_stride(1u << 30, 1000, 1, 64) == 0);
}

static void test_lib(void) {
  char cand[6][512], state[700];
  int n = kc_san_lib_candidates("/nonexistent/libsanitizer-public.so", "/nonexistent-cuda",
                                "/nonexistent-pip", cand, 6);
  CHECK(n == 4);
  CHECK(!strcmp(cand[0], "/nonexistent/libsanitizer-public.so"));
  CHECK(!strcmp(cand[1], "/nonexistent-cuda/compute-sanitizer/libsanitizer-public.so"));
  CHECK(!strcmp(cand[2], "/usr/local/cuda/compute-sanitizer/libsanitizer-public.so"));
  CHECK(!strcmp(cand[3], "/nonexistent-pip/libsanitizer-public.so"));
  /* a folder names the library inside it */
  n = kc_san_lib_candidates("/tmp", NULL, NULL, cand, 6);
  CHECK(n == 2 && !strcmp(cand[0], "/tmp/libsanitizer-public.so"));
  /* nothing there: NULL and a recorded reason (where the toolkit has no
   * compute-sanitizer, as on CI) */
  void *h = kc_san_lib_open("/nonexistent/libsanitizer-public.so", "/nonexistent-cuda",
                            "/nonexistent-pip", state, sizeof state);
  if (!h) CHECK(strstr(state, "not found") && strstr(state, "tried 4 path(s)"));
  const char *pip = getenv("KC_TEST_SAN_LIB");
  if (pip && pip[0]) {
    /* the pip package's copy loads on a machine with no GPU */
    h = kc_san_lib_open(pip, NULL, NULL, state, sizeof state);
    CHECK(h != NULL);
    CHECK(strstr(state, "libsanitizer-public.so") != NULL);
  }
  unsetenv("NV_SANITIZER_INJECTION_PORT_BASE");
  int before = kc_san_under_tool();
  setenv("NV_SANITIZER_INJECTION_PORT_BASE", "49152", 1);
  CHECK(kc_san_under_tool() == 1);
  unsetenv("NV_SANITIZER_INJECTION_PORT_BASE");
  CHECK(kc_san_under_tool() == before);
}

static void *slurp(const char *name, size_t *len) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s",
           getenv("KC_TEST_DATA") ? getenv("KC_TEST_DATA") : "test/unit/data", name);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *p = malloc((size_t)n);
  if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
    free(p);
    p = NULL;
  }
  fclose(f);
  *len = (size_t)n;
  return p;
}

static void test_cubin(void) {
  size_t len = 0, elen = 0;
  void *fb = slurp("sass_atomics.fatbin", &len);
  CHECK(fb != NULL);
  if (!fb) return;
  const char *why = NULL;
  char *elf = kc_cubin_from_image(fb, len, 90, &elen, &why);
  CHECK(elf != NULL);
  if (elf) {
    Elf64_Ehdr eh;
    memcpy(&eh, elf, sizeof eh);
    CHECK(((eh.e_flags >> 8) & 0xff) == 90);
    char names[8][128];
    int n = kc_cubin_vars(elf, elen, names, 8);
    CHECK(n == 2);
    int dev = 0, cst = 0;
    for (int i = 0; i < n; i++) {
      dev |= !strcmp(names[i], "kc_dev_var");
      cst |= !strcmp(names[i], "kc_const_var");
    }
    CHECK(dev && cst);
    CHECK(kc_cubin_vars(elf, elen, names, 1) == -1); /* more than max */
    CHECK(kc_cubin_vars(elf, 100, names, 8) == -1);  /* cut short: no read past it */
    /* what the module asks the device for: code, constant banks and the
     * zero-filled sections (7,696 bytes not in the file) */
    CHECK(kc_cubin_load_bytes(elf, elen) == 32066);
    CHECK(kc_cubin_load_bytes(elf, 100) == 100); /* unreadable: its length */
    free(elf);
  }
  /* no SASS for the device's architecture: none, with the reason */
  CHECK(kc_cubin_from_image(fb, len, 86, &elen, &why) == NULL && strstr(why, "no SASS"));
  free(fb);
}

struct want {
  const char *kernel;
  int floats, returning; /* floats 2: from sm_90 (sm_80 emulates it with a CAS loop) */
};

static void test_sass(void) {
  static const struct want w[] = {
      {"k_f32_red", 1, 0}, {"k_f64_red", 1, 0},  {"k_f32_atom", 1, 0}, {"g_f32_sub", 1, 0},
      {"k_h2_red", 1, -1}, {"k_bf2_red", 2, -1}, {"k_i32_red", 0, 0},  {"k_u64_red", 0, 0},
      {"k_i32_max", 0, 0}, {"g_i32_and", 0, 0},  {"g_u32_inc", 0, 0},  {"k_i32_atom", 0, 1},
      {"k_i32_cas", 0, 1}, {"k_f32_exch", 0, 1}, {"k_i32_sh", 0, 1},   {"g_i32_gen", 0, 1},
      {"v_use", 0, 0},
  };
  static const char *const arch[] = {"sm_80", "sm_90", "sm_100", "sm_120"};
  for (int a = 0; a < 4; a++) {
    char name[64];
    size_t len = 0;
    snprintf(name, sizeof name, "sass_atomics.%s.cubin", arch[a]);
    void *elf = slurp(name, &len);
    CHECK(elf != NULL);
    if (!elf) continue;
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
      struct kc_ptx_atomics at;
      int ret = 0;
      const char *why = NULL;
      int rc = kc_sass_atomics(elf, len, w[i].kernel, &at, &ret, &why);
      int floats = w[i].floats == 2 ? a > 0 : w[i].floats;
      int ok = rc == 0 && (at.float_adds > 0) == floats &&
               (w[i].returning < 0 || (ret > 0) == w[i].returning);
      if (!ok)
        fprintf(stderr, "  %s %s: rc %d floats %d returning %d other %d\n", arch[a], w[i].kernel,
                rc, at.float_adds, ret, at.other_atomics);
      CHECK(ok);
      if (floats) CHECK(strstr(at.first, "SASS +0x") == at.first);
    }
    struct kc_ptx_atomics at;
    int ret;
    const char *why = NULL;
    CHECK(kc_sass_atomics(elf, len, "no_such_kernel", &at, &ret, &why) == -1 && why);
    free(elf);
  }
  /* ELF ABI version 7 (SM in the flags' low byte): the ptxas 12.9 Triton
   * 3.6 bundles, sm_90a, from sass_atomics.abi7.ptx */
  size_t len = 0;
  void *elf = slurp("sass_atomics.abi7.sm_90a.cubin", &len);
  CHECK(elf != NULL);
  if (elf) {
    struct kc_ptx_atomics at;
    int ret = 0;
    const char *why = NULL;
    CHECK(kc_sass_atomics(elf, len, "k_f32_red", &at, &ret, &why) == 0 && at.float_adds == 1 &&
          ret == 0);
    free(elf);
  }
}

/* The cubin cache: a copy per lookup, per image and architecture, the least
 * recently used dropped for room, never more than its bytes held. */
static void test_cubin_cache(void) {
  size_t len = 0;
  long hits = 0, misses = 0;
  kc_cubin_cache_clear();
  CHECK(kc_cubin_cache_get(1, 90, &len) == NULL);
  kc_cubin_cache_put(1, 90, "elf-one", 8);
  char *a = kc_cubin_cache_get(1, 90, &len), *b = kc_cubin_cache_get(1, 90, &len);
  CHECK(a && b && a != b && len == 8 && !strcmp(a, "elf-one")); /* each caller its own copy */
  free(a);
  free(b);
  CHECK(kc_cubin_cache_get(1, 80, &len) == NULL); /* another architecture */
  CHECK(kc_cubin_cache_get(2, 90, &len) == NULL); /* another image */
  kc_cubin_cache_counts(&hits, &misses);
  CHECK(hits == 2 && misses == 3);
  /* more images than entries: the least recently used goes first */
  for (int i = 2; i <= KC_CUBIN_CACHE_ENTRIES; i++)
    kc_cubin_cache_put(i, 90, "x", 2);
  free(kc_cubin_cache_get(1, 90, &len)); /* image 1 used again: image 2 is the oldest */
  kc_cubin_cache_put(100, 90, "y", 2);
  char *c = kc_cubin_cache_get(2, 90, &len);
  CHECK(c == NULL);
  char *d = kc_cubin_cache_get(1, 90, &len), *e = kc_cubin_cache_get(100, 90, &len);
  CHECK(d && e && !strcmp(e, "y"));
  free(d);
  free(e);
  /* bytes: a cubin over the cap is not kept; one that fills it drops the rest */
  size_t big = KC_CUBIN_CACHE_BYTES;
  char *buf = calloc(1, big + 1);
  CHECK(buf != NULL);
  if (buf) {
    kc_cubin_cache_put(1000, 90, buf, big + 1);
    CHECK(kc_cubin_cache_get(1000, 90, &len) == NULL);
    kc_cubin_cache_put(1001, 90, buf, big);
    char *f = kc_cubin_cache_get(1001, 90, &len);
    CHECK(f && len == big);
    free(f);
    CHECK(kc_cubin_cache_get(1, 90, &len) == NULL && kc_cubin_cache_get(100, 90, &len) == NULL);
    free(buf);
  }
  kc_cubin_cache_clear();
}

int main(void) {
  test_cubin_cache();
  test_convert();
  test_epochs();
  test_unmodeled();
  test_guard_ranges();
  test_retry();
  test_lib();
  test_cubin();
  test_sass();
  return CHECK_DONE("test_san");
}
