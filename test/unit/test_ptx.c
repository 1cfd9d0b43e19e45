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

/* ptxas accepts the text (1), or there is no toolkit here (also 1, said). */
static int ptxas_ok(const char *text) {
  const char *ptxas = "/usr/local/cuda/bin/ptxas";
  FILE *t = fopen(ptxas, "r");
  if (!t) {
    printf("test_ptx: no ptxas: the copy is not compiled\n");
    return 1;
  }
  fclose(t);
  char tmp[] = "/tmp/kc_test_ptx_XXXXXX";
  int fd = mkstemp(tmp);
  FILE *o = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!o) return 0;
  fputs(text, o);
  fclose(o);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s -arch=sm_90 -o /dev/null %s", ptxas, tmp);
  int ok = system(cmd) == 0;
  unlink(tmp);
  return ok;
}

/* Generic addresses (resolved at run time), fences, release and acquire
 * forms, as inline asm and cuda::atomic_ref emit them. */
static const char generic_ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                                  ".visible .entry gen(.param .u64 gen_param_0)\n{\n"
                                  "\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<4>;\n"
                                  "\tld.param.u64 %rd1, [gen_param_0];\n"
                                  "\tld.u32 %r1, [%rd1+4];\n"
                                  /* an inline-asm scope closed on a
                                   * statement's line: what follows is
                                   * still instrumented */
                                  "\t{ .reg .b64 %tmp;\n"
                                  "\t  cvt.u64.u32 \t%tmp, %r1;\n"
                                  "\t  cvta.shared.u64 \t%rd2, %tmp; }\n"
                                  "\tst.u32 [%rd1], %r1;\n"
                                  "\tmembar.gl;\n"
                                  "\tatom.add.release.gpu.u32 %r2,[%rd1],%r1;\n"
                                  "\tld.acquire.gpu.u32 %r3, [%rd1];\n"
                                  "\tfence.acq_rel.gpu;\n"
                                  "\tmembar.cta;\n"
                                  "\tst.volatile.global.u32 [%rd1+8], %r3;\n"
                                  "\tst.local.u32 [%rd1], %r3;\n"
                                  "\tret;\n}\n";

static void generic_copy(void) {
  int sites = 0;
  struct kc_ptx_sites logged;
  const char *why = NULL;
  char *copy = kc_ptx_perturbed_copy(generic_ptx, "gen", &sites, &logged, &why);
  CHECK(copy != NULL);
  if (!copy) return;
  /* two generic accesses, membar.gl, the release's fence and its atomic,
   * the acquire, fence.acq_rel, the volatile store: 8; membar.cta (no
   * order between blocks) and the local store are not logged */
  CHECK(logged.n == 8);
  CHECK(logged.n == 8 && !strncmp(logged.text[3], "atom.add.release", 16) &&
        !strncmp(logged.text[4], "atom.add.release", 16));
  CHECK(strstr(copy, "isspacep.global") && strstr(copy, "cvta.to.shared.u64"));
  CHECK(ptxas_ok(copy));
  kc_ptx_sites_free(&logged);
  free(copy);
}

int main(int argc, char **argv) {
  generic_copy();
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
  /* Triton's entries declare pointer parameters ".ptr .global": not
   * module variables (the PTX route refused every Triton kernel) */
  CHECK(kc_ptx_module_vars(".version 8.7\n.target sm_90a\n.address_size 64\n"
                           ".global .align 1 .b8 _$_str[11] = {95, 95};\n"
                           ".visible .entry kc_lost_update(\n"
                           "\t.param .u64 .ptr .global .align 1 kc_lost_update_param_0,\n"
                           "\t.param .u32 kc_lost_update_param_1\n)\n"
                           ".reqntid 128, 1, 1\n{\n\tret;\n}\n",
                           names, 8) == 1 &&
        !strcmp(names[0], "_$_str"));

  int sites = 0;
  struct kc_ptx_sites logged;
  char *copy = kc_ptx_perturbed_copy(ptx, "_Z9lastblockPKfPfS1_", &sites, &logged, &why);
  /* logged: the shared flag `last`, the global part[] stores and loads,
   * the __threadfence and the counter's atomic, in program order */
  int shared = 0, global = 0, fence = 0, atom = 0;
  for (int i = 0; i < logged.n; i++) {
    shared += strstr(logged.text[i], ".shared") != NULL;
    global += strstr(logged.text[i], ".global") != NULL;
    fence += !strncmp(logged.text[i], "membar.gl", 9);
    atom += strstr(logged.text[i], "atom.global.inc") != NULL;
  }
  CHECK(shared >= 2 && global >= 3 && fence == 1 && atom == 1 && logged.calls == 0);
  for (int i = 0; i + 1 < logged.n; i++)
    if (!strncmp(logged.text[i], "membar.gl", 9)) CHECK(strstr(logged.text[i + 1], "atom.global"));
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
    CHECK(ptxas_ok(copy));
    free(copy);
  }
  CHECK(kc_ptx_perturbed_copy(ptx, "no_such_kernel", &sites, NULL, &why) == NULL &&
        strstr(why, "not defined"));
  free(ptx);
  free(fatbin);
  return CHECK_DONE("test_ptx");
}
