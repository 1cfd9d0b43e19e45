/* test/unit/test_limits.c — bounded inputs: each limit on what a contract
 * (or a regex option) may ask of kcheck fires with its position and names
 * the limit, inputs just inside it still work, and the inputs of the
 * reliability report (100,000-deep expressions and YAML, alias bombs, the
 * 22-character regex, /dev/zero, a FIFO) are refused quickly. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "contract.h"
#include "regex_guard.h"

static int lookup(void *ctx, const char *name, size_t len) {
  (void)ctx;
  return len == 1 && name[0] == 'n' ? 0 : -1;
}

static char *repeat(const char *head, const char *unit, int times, const char *tail) {
  size_t n = strlen(head) + strlen(unit) * (size_t)times + strlen(tail) + 1;
  char *s = malloc(n), *p = s;
  p = stpcpy(p, head);
  for (int i = 0; i < times; i++)
    p = stpcpy(p, unit);
  strcpy(p, tail);
  return s;
}

/* Compiles text; returns the error message (static) or NULL on success,
 * evaluating it with n = 3 into *v. */
static const char *expr(const char *text, int64_t *v) {
  static char err[256];
  int pos;
  struct kc_contract_expr *e =
      kc_contract_expr_compile(text, 1, lookup, NULL, err, sizeof err, &pos);
  if (!e) return err;
  const int64_t vars[] = {3};
  int rc = kc_contract_expr_eval(e, vars, v, err, sizeof err);
  kc_contract_expr_free(e);
  return rc ? err : NULL;
}

static void test_expr_limits(void) {
  int64_t v = 0;
  /* The report's 100,000-deep inputs are refused by length before any
   * parsing; 1,000-deep ones by nesting. */
  static const char *const units[] = {"(", "-", "min(n, "};
  for (int i = 0; i < 3; i++) {
    char *s = repeat("", units[i], 100000, "n");
    const char *m = expr(s, &v);
    CHECK(m && strstr(m, "longer than 4096 characters"));
    free(s);
    s = repeat("", units[i], 500, "n");
    m = expr(s, &v);
    CHECK(m && strstr(m, "deeper than 64 levels"));
    free(s);
  }
  char *s;
  const char *m;
  s = repeat("n", "+n", 300000, "");
  m = expr(s, &v);
  CHECK(m && strstr(m, "longer than 4096 characters"));
  free(s);
  s = repeat("n", "+n", 5000, "");
  m = expr(s, &v);
  CHECK(m && (strstr(m, "longer than") || strstr(m, "deeper than")));
  free(s);
  /* Just inside the limits: fine. */
  s = repeat("n", "+n", 200, "");
  CHECK(expr(s, &v) == NULL && v == 201 * 3);
  free(s);
  s = repeat("", "(", 60, "n");
  char *t = repeat(s, ")", 60, "");
  CHECK(expr(t, &v) == NULL && v == 3);
  free(s);
  free(t);
}

static int diag_has(const struct kc_contract_set *set, const char *what, int *line) {
  for (int i = 0; i < set->ndiags; i++)
    if (strstr(set->diags[i].msg, what)) {
      if (line) *line = set->diags[i].line;
      return 1;
    }
  return 0;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void test_yaml_limits(void) {
  struct kc_contract_set set = {0};
  /* 100,000 nested lists. */
  char *s = repeat("contracts: ", "[", 100000, "");
  double t0 = now();
  CHECK(kc_contract_parse_text(s, strlen(s), "deep.yaml", &set) >= 1);
  CHECK(diag_has(&set, "deeper than 32 levels", NULL));
  CHECK(now() - t0 < 2.0);
  kc_contract_set_free(&set);
  free(s);
  /* A billion laughs: 9 levels of 10 aliases each. */
  char bomb[4096], *p = bomb;
  p += sprintf(p, "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
  for (int i = 1; i < 9; i++)
    p += sprintf(p, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i,
                 i, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
  p += sprintf(p, "contracts: []\n");
  t0 = now();
  int line = 0;
  CHECK(kc_contract_parse_text(bomb, strlen(bomb), "laughs.yaml", &set) >= 1);
  CHECK(diag_has(&set, "more than 200000 nodes", &line) && line >= 5);
  CHECK(now() - t0 < 2.0);
  kc_contract_set_free(&set);
  /* A few harmless anchors still load. */
  const char *ok = "shape: &s [n]\n"
                   "contracts:\n"
                   "  - kernel: {name: k}\n"
                   "    params:\n"
                   "      - {name: x, tensor: {role: out, format: fp32, shape: *s}}\n"
                   "      - {name: n, scalar: i32}\n"
                   "    op: add\n";
  kc_contract_parse_text(ok, strlen(ok), "anchors.yaml", &set);
  CHECK(!diag_has(&set, "nodes", NULL) && !diag_has(&set, "deeper", NULL));
  kc_contract_set_free(&set);
}

static void test_paths(void) {
  struct kc_contract_set set = {0};
  CHECK(kc_contract_parse_path("/dev/zero", &set) == 1 &&
        diag_has(&set, "not a regular file", NULL));
  kc_contract_set_free(&set);
  char dir[] = "/tmp/kc-limits-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char fifo[64], big[64];
  snprintf(fifo, sizeof fifo, "%s/f.yaml", dir);
  snprintf(big, sizeof big, "%s/big.yaml", dir);
  CHECK(mkfifo(fifo, 0600) == 0);
  double t0 = now();
  CHECK(kc_contract_parse_path(fifo, &set) == 1 && diag_has(&set, "not a regular file", NULL));
  CHECK(now() - t0 < 2.0);
  kc_contract_set_free(&set);
  int fd = open(big, O_WRONLY | O_CREAT, 0600);
  CHECK(fd >= 0 && ftruncate(fd, (off_t)KC_CONTRACT_MAX_FILE_BYTES + 1) == 0);
  close(fd);
  /* The directory: the FIFO and the big file are both refused, by name. */
  CHECK(kc_contract_parse_path(dir, &set) == 2);
  CHECK(diag_has(&set, "over the limit of 1048576 bytes", NULL));
  kc_contract_set_free(&set);
  unlink(fifo);
  unlink(big);
  rmdir(dir);
}

static void test_regex(void) {
  char err[256];
  double t0 = now();
  CHECK(kc_regex_check("f++++++++++++++++++++++", err, sizeof err) && strstr(err, "nested"));
  CHECK(kc_regex_check("(a+)+", err, sizeof err) && strstr(err, "nested"));
  CHECK(kc_regex_check("((ab)*c)*", err, sizeof err) && strstr(err, "nested"));
  CHECK(kc_regex_check("a{2}{3}", err, sizeof err) && strstr(err, "nested"));
  CHECK(kc_regex_check("a{1000}", err, sizeof err) && strstr(err, "over the limit of 100"));
  CHECK(kc_regex_check("(a)\\1", err, sizeof err) && strstr(err, "back-references"));
  /* Every bound regcomp takes, glibc's "{,n}" and "{,}" included, is
   * counted and its nesting refused ("{,30000}" once passed as a literal
   * brace and cost 12 GB). */
  static const char *const over[] = {"a{,30000}", "a{,101}",        "a{101,}",
                                     "a{5,101}",  "a{99999999999}", "a{,99999999999}"};
  for (size_t i = 0; i < sizeof over / sizeof *over; i++)
    CHECK(kc_regex_check(over[i], err, sizeof err) && strstr(err, "over the limit of 100"));
  static const char *const nested[] = {"(a{,3}){,3}", "a{,3}{,3}", "(a{2,}){2}",
                                       "(a{,}b)*",    "(a*){,5}",  "a{,}{,}"};
  for (size_t i = 0; i < sizeof nested / sizeof *nested; i++)
    CHECK(kc_regex_check(nested[i], err, sizeof err) && strstr(err, "nested"));
  char *longp = repeat("", "a", KC_REGEX_MAX_LEN + 1, "");
  CHECK(kc_regex_check(longp, err, sizeof err) && strstr(err, "over the limit of 256"));
  free(longp);
  CHECK(now() - t0 < 1.0);
  /* Ordinary patterns pass and compile. */
  static const char *const good[] = {
      "^gemm_.*_kernel$",   "(foo|bar)+_k", "[+*]+x", "a{3}b?",         "x\\+y+", "softmax(_rows)?",
      "[[:alpha:]]+[0-9]*", "a{,3}b",       "a{2,}c", "x{,100}y{100,}", "a{,}",   NULL};
  for (int i = 0; good[i]; i++) {
    regex_t re;
    int ok = kc_regex_compile(&re, good[i], err, sizeof err) == 0;
    if (!ok) fprintf(stderr, "  %s: %s\n", good[i], err);
    CHECK(ok);
    if (ok) regfree(&re);
  }
  /* The contract file of the report: refused at its line and column. */
  struct kc_contract_set set = {0};
  const char *bomb = "contracts:\n  - kernel: {regex: \"f++++++++++++++++++++++\"}\n"
                     "    params: []\n    op: add\n";
  int line = 0;
  kc_contract_parse_text(bomb, strlen(bomb), "regex_bomb.yaml", &set);
  CHECK(diag_has(&set, "nested repetition", &line) && line == 2);
  kc_contract_set_free(&set);
}

/* Lint: what a contract states that cannot be right, decided without a
 * launch; and no complaint about the shipped and test contracts. */
static void test_lint(void) {
  static const char *const tmpl =
      "contracts:\n"
      "  - kernel: {name: _Z6vecaddPKfS0_Pfi}\n"
      "    params:\n"
      "      - {name: a, tensor: {role: in, format: %s, shape: [%s]}}\n"
      "      - {name: b, tensor: {role: in, format: fp32, shape: [n]}}\n"
      "      - {name: c, tensor: {role: out, format: fp32, shape: [n]}}\n"
      "      - {name: n, scalar: i32}\n"
      "    op: add\n";
  static const struct {
    const char *format, *shape, *msg;
  } cases[] = {{"fp32", "0", "never positive"},
               {"fp32", "-n", "never positive"},
               {"fp32", "-n - 1", "never positive"},
               {"fp32", "'min(n, 0)'", "never positive"},
               {"bool", "n", "narrower than the 4-byte floats"},
               {"fp16", "n", "narrower than the 4-byte floats"},
               {"fp32", "n", NULL},
               {"fp32", "n/2", NULL},
               {"fp32", "1 - n", NULL},
               {"fp64", "n", NULL}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[1024];
    snprintf(text, sizeof text, tmpl, cases[i].format, cases[i].shape);
    struct kc_contract_set set = {0};
    int errors = kc_contract_parse_text(text, strlen(text), "lint.yaml", &set);
    int line = 0;
    int ok = cases[i].msg ? errors == 1 && diag_has(&set, cases[i].msg, &line) && line == 4
                          : errors == 0 && set.n == 1;
    if (!ok)
      fprintf(stderr, "  lint case %zu (%s, %s): %d errors%s%s\n", i, cases[i].format,
              cases[i].shape, errors, set.ndiags ? ": " : "", set.ndiags ? set.diags[0].msg : "");
    CHECK(ok);
    kc_contract_set_free(&set);
  }
  CHECK(kc_contract_mangled_float_pointee("_Z6vecaddPKfS0_Pfi", 0) == 4);
  CHECK(kc_contract_mangled_float_pointee("_Z6vecaddPKfS0_Pfi", 1) == 4);
  CHECK(kc_contract_mangled_float_pointee("_Z6vecaddPKfS0_Pfi", 2) == 4);
  CHECK(kc_contract_mangled_float_pointee("_Z6vecaddPKfS0_Pfi", 3) == 0);
  CHECK(kc_contract_mangled_float_pointee("_Z4gemmPK6__halfS1_Pfiii", 0) == 2);
  CHECK(kc_contract_mangled_float_pointee("_Z4gemmPK6__halfS1_Pfiii", 1) == 2);
  CHECK(kc_contract_mangled_float_pointee("_Z4gemmPK6__halfS1_Pfiii", 2) == 4);
  CHECK(kc_contract_mangled_float_pointee("_Z1kPd", 0) == 8 &&
        kc_contract_mangled_float_pointee("_Z1kPi", 0) == 0);
  CHECK(kc_contract_mangled_float_pointee("kernel_c_name", 0) == 0);
  /* a substitution index of many base-36 digits (fuzz-found: its value
   * overflowed int) names no candidate */
  CHECK(kc_contract_mangled_float_pointee("_Z6vecaddPKfS0MMMMMMMMMMM_Pfi", 1) == 0);
  CHECK(kc_contract_mangled_float_pointee("_Z6vecaddPKfSZZZZZZZZZZZZZZZZ_Pfi", 2) == 0);
  CHECK(kc_contract_mangled_float_pointee("_Z6vecaddPKfS1_Pfi", 1) == 0); /* S1_: candidate 2 */
  CHECK(kc_contract_mangled_float_pointee("_ZN2fk3fooEPf", 0) == 0); /* nested names: not read */
}

int main(void) {
  test_expr_limits();
  test_yaml_limits();
  test_paths();
  test_regex();
  test_lint();
  return CHECK_DONE("test_limits");
}
