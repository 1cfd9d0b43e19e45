/* test/unit/test_ptx.c — PTX out of a real nvcc 13.0 fatbin (zstd-
 * compressed entry, test/unit/data/ptx_fixture.fatbin), the atomics that
 * make a kernel's result order-dependent, module variables, and the
 * perturbed copy (compiled with ptxas when the toolkit is there). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "access.h"
#include "check.h"
#include "ptx.h"
#include "ptx_source.h"

static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)len + 1);
  *n = fread(buf, 1, (size_t)len, f);
  buf[*n] = 0;
  fclose(f);
  return buf;
}

static void atomics_of(const char *ptx, const char *name, struct kc_ptx_atomics *a) {
  struct kc_ptx_span sp;
  memset(a, 0, sizeof *a);
  CHECK(kc_ptx_find_entry(ptx, name, &sp) == 0);
  if (kc_ptx_find_entry(ptx, name, &sp) == 0) kc_ptx_scan_atomics(ptx, &sp, a);
}

/* who: thread | kind << 16 | size << 20; epoch: barrier | warp barrier << 16 */
#define ACC(addr, tid, kind, size, ep, wep)                                                        \
  { addr, (tid) | (kind) << 16 | (size) << 20, (ep) | (wep) << 16, 0 }

static int races(const struct kc_access *rec, size_t n, struct kc_access pair[2]) {
  struct kc_access_touch *t = malloc(4 * (n ? n : 1) * sizeof *t);
  int r = kc_access_conflict(rec, n, t, pair);
  free(t);
  return r;
}

static void access_analysis(void) {
  struct kc_access p[2];
  /* a tree-reduction step without __syncthreads: thread 0 reads what
   * thread 64 writes, both in epoch 1 (must fire) */
  const struct kc_access nosync[] = {ACC(0, 0, KC_ACC_WRITE, 4, 1, 0),
                                     ACC(256, 0, KC_ACC_READ, 4, 1, 0),
                                     ACC(256, 64, KC_ACC_WRITE, 4, 1, 0)};
  CHECK(races(nosync, 3, p) == 1 && p[0].addr == 256 && (p[0].who & 0xffff) != (p[1].who & 0xffff));
  /* the same with the barrier: epochs 1 and 2 (silent) */
  const struct kc_access sync[] = {ACC(256, 0, KC_ACC_READ, 4, 1, 0),
                                   ACC(256, 64, KC_ACC_WRITE, 4, 2, 0)};
  CHECK(races(sync, 2, p) == 0);
  /* lanes of one warp: unordered without __syncwarp, ordered with it */
  const struct kc_access lanes[] = {ACC(64, 1, KC_ACC_READ, 4, 0, 0),
                                    ACC(64, 17, KC_ACC_WRITE, 4, 0, 0)};
  CHECK(races(lanes, 2, p) == 1);
  const struct kc_access lanes_sync[] = {ACC(64, 1, KC_ACC_READ, 4, 0, 1),
                                         ACC(64, 17, KC_ACC_WRITE, 4, 0, 2)};
  CHECK(races(lanes_sync, 2, p) == 0);
  /* ...but __syncwarp epochs do not order two warps */
  const struct kc_access warps[] = {ACC(64, 1, KC_ACC_READ, 4, 0, 1),
                                    ACC(64, 40, KC_ACC_WRITE, 4, 0, 2)};
  CHECK(races(warps, 2, p) == 1);
  /* atomics among themselves and reads among themselves are fine; a
   * plain read of an atomically updated word is not */
  const struct kc_access atomics[] = {
      ACC(8, 0, KC_ACC_ATOMIC, 4, 1, 0), ACC(8, 33, KC_ACC_ATOMIC, 4, 1, 0),
      ACC(12, 0, KC_ACC_READ, 4, 1, 0), ACC(12, 99, KC_ACC_READ, 4, 1, 0)};
  CHECK(races(atomics, 4, p) == 0);
  const struct kc_access mixed[] = {ACC(8, 0, KC_ACC_ATOMIC, 4, 1, 0),
                                    ACC(8, 33, KC_ACC_READ, 4, 1, 0)};
  CHECK(races(mixed, 2, p) == 1);
  /* a 16-byte vector store overlaps a 4-byte read of its third word */
  const struct kc_access vec[] = {ACC(32, 0, KC_ACC_WRITE, 16, 0, 0),
                                  ACC(40, 50, KC_ACC_READ, 4, 0, 0)};
  CHECK(races(vec, 2, p) == 1 && p[0].addr == 40);
  /* one thread's own accesses are ordered */
  const struct kc_access own[] = {ACC(4, 7, KC_ACC_WRITE, 4, 0, 0),
                                  ACC(4, 7, KC_ACC_READ, 4, 0, 0)};
  CHECK(races(own, 2, p) == 0);
  CHECK(races(NULL, 0, p) == 0);
}

int main(int argc, char **argv) {
  access_analysis();
  const char *dir = argc > 1 ? argv[1] : "test/unit/data";
  char path[512];
  snprintf(path, sizeof path, "%s/ptx_fixture.fatbin", dir);
  size_t n = 0;
  char *fatbin = slurp(path, &n);
  CHECK(fatbin != NULL);
  if (!fatbin) return CHECK_DONE("test_ptx");
  size_t len = 0;
  const char *why = NULL;
  char *ptx = kc_ptx_from_image(fatbin, 90, &len, &why);
  CHECK(ptx != NULL);
  if (!ptx) {
    fprintf(stderr, "no PTX: %s\n", why);
    return CHECK_DONE("test_ptx");
  }
  CHECK(len == strlen(ptx) && strstr(ptx, ".target sm_90"));
  /* A device older than the PTX: none usable; a fatbin wrapper finds the same. */
  CHECK(kc_ptx_from_image(fatbin, 80, &len, &why) == NULL && strstr(why, "newer"));
  struct {
    int magic, version;
    const void *data;
    void *file;
  } wrapper = {0x466243b1, 1, fatbin, NULL};
  char *via = kc_ptx_from_image(&wrapper, 90, &len, &why);
  CHECK(via && !strcmp(via, ptx));
  free(via);
  /* An ELF (cubin) carries no PTX; PTX text is its own. */
  unsigned char elf[64] = {0x7f, 'E', 'L', 'F', 2};
  CHECK(kc_ptx_from_image(elf, 90, &len, &why) == NULL && strstr(why, "cubin"));
  char *self = kc_ptx_from_image(ptx, 90, &len, &why);
  CHECK(self && !strcmp(self, ptx));
  free(self);

  struct kc_ptx_atomics a;
  atomics_of(ptx, "_Z4fsumPKfPf", &a);
  CHECK(a.float_adds == 1 && a.slot_atomics == 0 && strstr(a.first, "add.f32"));
  atomics_of(ptx, "_Z8worklistPKiPiS1_", &a);
  CHECK(a.float_adds == 0 && a.slot_atomics == 1 && !strncmp(a.first, "st.global", 9));
  /* the counter's result is only compared: order-independent */
  atomics_of(ptx, "_Z9lastblockPKfPfS1_", &a);
  CHECK(a.float_adds == 0 && a.slot_atomics == 0 && a.other_atomics == 1 && !a.first[0]);
  struct kc_ptx_span sp;
  CHECK(kc_ptx_find_entry(ptx, "_Z4fsum", &sp) == -1); /* a prefix is not a name */

  char names[8][128];
  int nv = kc_ptx_module_vars(ptx, names, 8);
  CHECK(nv == 2 && !strcmp(names[0], "done") && !strcmp(names[1], "scale"));
  CHECK(kc_ptx_module_vars(".version 9.0\n.target sm_90\n.global .texref t;\n", names, 8) == -1);

  int sites = 0;
  struct kc_ptx_sites logged;
  char *copy = kc_ptx_perturbed_copy(ptx, "_Z9lastblockPKfPfS1_", &sites, &logged, &why);
  /* the shared flag `last`: written by thread 0, read by all (logged) */
  CHECK(logged.n >= 2 && strstr(logged.text[0], ".shared"));
  if (copy) CHECK(strstr(copy, "$Lkc_log_0:") && strstr(copy, "st.global.v4.u32"));
  kc_ptx_sites_free(&logged);
  CHECK(copy != NULL);
  if (copy) {
    /* only the kernel asked for, with kcheck's configuration and delays */
    CHECK(strstr(copy, ".entry _Z9lastblockPKfPfS1_") && !strstr(copy, ".entry _Z4fsum") &&
          !strstr(copy, ".entry _Z8worklist"));
    CHECK(strstr(copy, ".global .align 4 .u32 " KC_PTX_CFG "[16];") != NULL);
    CHECK(sites >= 5 && strstr(copy, "nanosleep.u32"));
    /* the module variables stay (the copy gets the application's values) */
    CHECK(strstr(copy, " done;") && strstr(copy, " scale[16];"));
    /* a copy of a copy is refused: the configuration is already declared */
    int s2;
    CHECK(kc_ptx_perturbed_copy(copy, "_Z9lastblockPKfPfS1_", &s2, NULL, &why) == NULL);
    const char *ptxas = "/usr/local/cuda/bin/ptxas";
    FILE *t = fopen(ptxas, "r");
    if (t) {
      fclose(t);
      char tmp[] = "/tmp/kc_test_ptx_XXXXXX";
      int fd = mkstemp(tmp);
      FILE *o = fd >= 0 ? fdopen(fd, "w") : NULL;
      if (o) {
        fputs(copy, o);
        fclose(o);
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "%s -arch=sm_90 -o /dev/null %s", ptxas, tmp);
        CHECK(system(cmd) == 0);
        unlink(tmp);
      }
    } else {
      printf("test_ptx: no ptxas: the copy is not compiled\n");
    }
    free(copy);
  }
  CHECK(kc_ptx_perturbed_copy(ptx, "no_such_kernel", &sites, NULL, &why) == NULL &&
        strstr(why, "not defined"));
  free(ptx);
  free(fatbin);
  return CHECK_DONE("test_ptx");
}
