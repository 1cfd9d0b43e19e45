/* libkcheck/findings/bug.c — violations grouped into bugs by their code
 * sites (bug.h). */
#include "bug.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

#define MAX_BUGS 1024
#define HOST_SITE_FRAMES 3

struct bug {
  uint64_t key;
  long count, first_launch;
  int nsites;
  int suppressed; /* its first occurrence was suppressed: so are the others */
  char gate[64];  /* the gates that saw it, in order: "stream_order,stream_delay" */
  char kernel_name[160];
  char sites[2][200]; /* as labels in kc_bug_note */
};
static struct bug bugs[MAX_BUGS];
static int nbugs;

#define FNV_BASIS 1469598103934665603ull
#define FNV_PRIME 1099511628211ull
static uint64_t fnv(uint64_t h, const char *s) {
  for (; s && *s; s++)
    h = (h ^ (unsigned char)*s) * FNV_PRIME;
  return (h ^ 0xff) * FNV_PRIME; /* a separator: "ab"+"c" differs from "a"+"bc" */
}

static const char *str(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

static int user_file(const char *f);

json_t *kc_user_frame(json_t *python) {
  size_t i;
  json_t *fr;
  json_array_foreach(python, i, fr) {
    if (user_file(str(fr, "file"))) return fr;
  }
  return json_array_get(python, 0);
}

/* The interpreter's and the C library's frames say nothing about where a
 * launch came from (the Python code above them does). */
static int interpreter_module(const char *module) {
  const char *b = strrchr(module, '/') ? strrchr(module, '/') + 1 : module;
  static const char *const skip[] = {"libpython", "_ctypes",  "libffi", "python",
                                     "libc.so",   "ld-linux", NULL};
  for (int i = 0; skip[i]; i++)
    if (!strncmp(b, skip[i], strlen(skip[i]))) return 1;
  return 0;
}

/* The CUDA runtime's and driver's frames (shared, or the static runtime
 * linked into the program: its symbols carry a libcudart_static_ prefix)
 * and nvcc's launch stubs are the same for every launch: the site is the
 * code that called them. */
static int runtime_frame(const char *module, const char *symbol) {
  const char *b = strrchr(module, '/') ? strrchr(module, '/') + 1 : module;
  static const char *const mods[] = {"libcudart", "libcuda.so", NULL};
  static const char *const syms[] = {
      "libcudart_static_", "cudaLaunch", "cudaGraphLaunch", "__device_stub__", "cuLaunch",
      "cuGraphLaunch",     NULL};
  for (int i = 0; mods[i]; i++)
    if (!strncmp(b, mods[i], strlen(mods[i]))) return 1;
  for (int i = 0; syms[i]; i++)
    if (!strncmp(symbol, syms[i], strlen(syms[i]))) return 1;
  return 0;
}

static int user_file(const char *f) {
  return f[0] && !strstr(f, "/kcheck/") && !strstr(f, "/torch/") && !strstr(f, "site-packages") &&
         !strstr(f, "<frozen");
}

/* stack's site: its label (for people) and hash (module offsets, stable
 * across processes of one build); 0 when it has none. The innermost
 * PY_SITE_FRAMES frames of the user's code: a launch helper that every
 * launch goes through is not the site, its callers tell them apart. */
#define PY_SITE_FRAMES 3
static int site_of(json_t *stack, char *label, size_t n, uint64_t *h) {
  json_t *python = json_object_get(stack, "python");
  size_t i, used = 0, at = 0;
  json_t *fr;
  const char *first_file = "";
  *h = FNV_BASIS;
  label[0] = 0;
  json_array_foreach(python, i, fr) {
    const char *f = str(fr, "file");
    if (!user_file(f)) continue;
    long long line = (long long)json_integer_value(json_object_get(fr, "line"));
    char one[400];
    snprintf(one, sizeof one, "%s:%lld", f, line);
    *h = fnv(*h, one);
    /* callers in the same file by their line only */
    if (!used) first_file = f;
    if (at < n)
      at += (size_t)(used ? strcmp(f, first_file) ? snprintf(label + at, n - at, " < %s", one)
                                                  : snprintf(label + at, n - at, " < :%lld", line)
                          : snprintf(label + at, n - at, "%s", one));
    if (++used == PY_SITE_FRAMES) break;
  }
  if (used) return 1;
  json_array_foreach(json_object_get(stack, "host"), i, fr) {
    const char *mod = str(fr, "module");
    if (used == HOST_SITE_FRAMES) break;
    if (interpreter_module(mod) || runtime_frame(mod, str(fr, "symbol"))) continue;
    const char *base = strrchr(mod, '/') ? strrchr(mod, '/') + 1 : mod;
    *h = fnv(fnv(*h, base), str(fr, "offset"));
    if (!used++) {
      const char *sym = str(fr, "symbol");
      if (json_object_get(fr, "file"))
        snprintf(label, n, "%s at %s:%lld (%s)", sym[0] ? sym : "??", str(fr, "file"),
                 (long long)json_integer_value(json_object_get(fr, "line")), base);
      else
        snprintf(label, n, "%s (%s+%s)", sym[0] ? sym : "??", base, str(fr, "offset"));
    }
  }
  return used > 0;
}

void kc_site_label(json_t *stack, char *out, size_t n) {
  uint64_t h;
  if (!site_of(stack, out, n, &h)) snprintf(out, n, "no frames");
}

/* The two sides' stacks of a two-sided violation: the earlier operation
 * and the later one; 0 for a one-sided one. */
static int sides(json_t *rec, json_t **a, json_t **b, const char **a_op, const char **b_op) {
  json_t *ev = json_object_get(rec, "evidence");
  json_t *first = json_object_get(ev, "first"), *second = json_object_get(ev, "second");
  json_t *delayed = json_object_get(ev, "delayed");
  /* stream_order's two operations (an access-level race's first/second
   * are two threads of one launch: one-sided) */
  if (json_is_object(first) && json_is_object(second) && json_object_get(first, "op") &&
      json_object_get(second, "op")) {
    *a = json_object_get(first, "stack"), *b = json_object_get(second, "stack");
    *a_op = str(first, "op"), *b_op = str(second, "op");
    return 1;
  }
  if (json_is_object(delayed)) {
    *a = json_object_get(delayed, "stack"), *b = json_object_get(rec, "stack");
    *a_op = str(delayed, "op"), *b_op = str(rec, "kernel_name");
    return 1;
  }
  return 0;
}

/* The gates that see one bug from two sides: stream_delay shows a
 * stream_order finding as a changed result (the same two operations), and
 * race re-runs what determinism re-runs, perturbed (the same launch). A
 * bug is keyed by its family and its sites, so one missing wait is one bug
 * whichever of them saw it. */
static const char *family(const char *gate) {
  if (!strcmp(gate, "stream_delay")) return "stream_order";
  if (!strcmp(gate, "determinism")) return "race";
  return gate;
}

/* Adds gate to the bug's list of gates (once). */
static void saw(struct bug *g, const char *gate) {
  size_t n = strlen(gate), len = strlen(g->gate);
  for (const char *p = g->gate; (p = strstr(p, gate)); p += n)
    if ((p == g->gate || p[-1] == ',') && (p[n] == ',' || !p[n])) return;
  if (len + n + 2 <= sizeof g->gate)
    snprintf(g->gate + len, sizeof g->gate - len, "%s%s", len ? "," : "", gate);
}

long kc_bug_note(json_t *rec, int suppressed, int *index) {
  const char *gate = str(rec, "gate");
  char labels[2][200];
  memset(labels, 0, sizeof labels);
  int nsites = 0;
  uint64_t key = fnv(FNV_BASIS, family(gate)), h;
  json_t *a, *b;
  const char *a_op, *b_op;
  if (sides(rec, &a, &b, &a_op, &b_op)) {
    json_t *st[2] = {a, b};
    const char *op[2] = {a_op, b_op};
    for (int i = 0; i < 2; i++) {
      /* a side without frames: its operation stands in for its site */
      if (!site_of(st[i], labels[i], sizeof labels[i], &h))
        snprintf(labels[i], sizeof labels[i], "%s (no frames)", op[i]), h = fnv(FNV_BASIS, op[i]);
      key = fnv(key, "") ^ h;
    }
    nsites = 2;
  } else {
    /* the kernel is part of the bug; where it was launched from tells
     * launches of one kernel by different code apart */
    key = fnv(key, str(rec, "kernel_name")[0] ? str(rec, "kernel_name") : str(rec, "op"));
    if (site_of(json_object_get(rec, "stack"), labels[0], sizeof labels[0], &h)) {
      key ^= h;
      nsites = 1;
    } else {
      key = fnv(key, str(rec, "signature"));
    }
  }
  key = key * FNV_PRIME ^ (key >> 29);
  char hex[24];
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)key);
  json_object_set_new(rec, "bug", json_string(hex));
  json_t *s = json_array();
  for (int i = 0; s && i < nsites; i++)
    json_array_append_new(s, json_string(labels[i]));
  json_object_set_new(rec, "sites", s);

  *index = -1;
  for (int i = 0; i < nbugs; i++)
    if (bugs[i].key == key) {
      *index = i;
      saw(&bugs[i], gate);
      return ++bugs[i].count;
    }
  if (nbugs == MAX_BUGS) return 1; /* table full: counted as new */
  struct bug *g = &bugs[nbugs];
  memset(g, 0, sizeof *g);
  g->key = key;
  saw(g, gate);
  /* the PyTorch binding's op-level records name an op instead */
  snprintf(g->kernel_name, sizeof g->kernel_name, "%s",
           str(rec, "kernel_name")[0] ? str(rec, "kernel_name") : str(rec, "op"));
  memcpy(g->sites, labels, sizeof g->sites);
  g->nsites = nsites;
  g->first_launch = (long)json_integer_value(json_object_get(rec, "launch"));
  g->suppressed = suppressed;
  g->count = 1;
  *index = nbugs++;
  return 1;
}

void kc_bug_repeat(int index, long n) {
  if (index >= 0 && index < nbugs) bugs[index].count += n;
}

void kc_bugs_summary(json_t *summary) {
  json_t *list = json_array();
  long n = 0;
  for (int i = 0; list && i < nbugs; i++) {
    if (bugs[i].suppressed) continue;
    char hex[24];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)bugs[i].key);
    json_t *s = json_array();
    for (int j = 0; s && j < bugs[i].nsites; j++)
      json_array_append_new(s, json_string(bugs[i].sites[j]));
    json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:o, s:I, s:I}", "bug", hex, "gate",
                                          bugs[i].gate, "kernel_name", bugs[i].kernel_name, "sites",
                                          s, "occurrences", (json_int_t)bugs[i].count,
                                          "first_launch", (json_int_t)bugs[i].first_launch));
    n++;
  }
  json_object_set_new(summary, "unique_bugs", json_integer(n));
  json_object_set_new(summary, "bugs", list);
}

long kc_bugs_print_summary(void) {
  long n = 0;
  for (int i = 0; i < nbugs; i++) {
    const struct bug *g = &bugs[i];
    if (g->suppressed) continue;
    n++;
    if (g->nsites == 2)
      kc_log_printf(KC_LOG_WARN, "bug %ld [%s] %s -> %s: %ld occurrence%s", n, g->gate, g->sites[0],
                    g->sites[1], g->count, g->count == 1 ? "" : "s");
    else
      kc_log_printf(KC_LOG_WARN, "bug %ld [%s] %s%s%s: %ld occurrence%s", n, g->gate,
                    g->kernel_name, g->nsites ? " at " : "", g->nsites ? g->sites[0] : "", g->count,
                    g->count == 1 ? "" : "s");
  }
  return n;
}

void kc_bugs_reset_child(void) { nbugs = 0; }
