/* test/unit/test_ptx.c — PTX out of a real nvcc 13.0 fatbin (zstd-
 * compressed entry, test/unit/data/ptx_fixture.fatbin), the atomics that
 * make a kernel's result order-dependent, module variables, and the
 * perturbed copy (compiled with ptxas when the toolkit is there). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int main(int argc, char **argv) {
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
  char *copy = kc_ptx_perturbed_copy(ptx, "_Z9lastblockPKfPfS1_", &sites, NULL, &why);
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
