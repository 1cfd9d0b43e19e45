/* libkcheck/options.c — KCHECK_OPTIONS parsing in the style of ASAN_OPTIONS:
 * one table of typed rows, warnings with the nearest valid name for unknown
 * keys and KCHECK_* variables, bad values reported with their source. */
#include "options.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

struct kc_options kc_opt;

enum opt_type { T_STR, T_INT, T_DOUBLE, T_SIZE, T_BOOL };

struct opt_row {
  const char *name;
  enum opt_type type;
  const char *def; /* default as text: parsed like a user value */
  const char *help;
  void *field;
};

#define KC_STRINGIFY_(x) #x
#define KC_STRINGIFY(x) KC_STRINGIFY_(x)
static const struct opt_row rows[] = {
#define KC_OPT(type, name, def, help) {#name, T_##type, KC_STRINGIFY(def), help, &kc_opt.name},
#include "options.def"
#undef KC_OPT
};
#define NROWS (sizeof rows / sizeof rows[0])

/* Strings owned by the options (values are copied out of the spec). */
static char *owned[NROWS];

size_t kc_edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 63 || lb > 63) return la > lb ? la : lb;
  size_t prev[64], cur[64];
  for (size_t j = 0; j <= lb; j++)
    prev[j] = j;
  for (size_t i = 1; i <= la; i++) {
    cur[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      // NOLINTNEXTLINE(clang-analyzer-core.UndefinedBinaryOperatorResult): prev[0..lb] set above
      size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
      size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
      cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
    }
    memcpy(prev, cur, (lb + 1) * sizeof cur[0]);
  }
  return prev[lb];
}

static const char *nearest_option(const char *key) {
  const char *best = NULL;
  size_t bestd = (size_t)-1;
  for (size_t i = 0; i < NROWS; i++) {
    size_t d = kc_edit_distance(key, rows[i].name);
    if (d < bestd) bestd = d, best = rows[i].name;
  }
  return best;
}

static int parse_size(const char *v, unsigned long long *out) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (end == v || errno || x < 0) return -1;
  double mul = 1;
  switch (*end) {
  case 'k':
  case 'K':
    mul = 1024.0;
    end++;
    break;
  case 'm':
  case 'M':
    mul = 1024.0 * 1024;
    end++;
    break;
  case 'g':
  case 'G':
    mul = 1024.0 * 1024 * 1024;
    end++;
    break;
  case 't':
  case 'T':
    mul = 1024.0 * 1024 * 1024 * 1024;
    end++;
    break;
  default: break;
  }
  if (*end == 'B' || *end == 'b') end++;
  if (*end) return -1;
  *out = (unsigned long long)(x * mul);
  return 0;
}

/* Sets one row from text; -1 when the text is not a valid value. */
static int set_value(const struct opt_row *r, const char *v, size_t idx) {
  char *end;
  errno = 0;
  switch (r->type) {
  case T_STR: {
    char *copy = strdup(v);
    if (!copy) return -1;
    free(owned[idx]);
    owned[idx] = copy;
    /* The default literal arrives quoted from the .def: strip the quotes. */
    size_t n = strlen(copy);
    if (n >= 2 && copy[0] == '"' && copy[n - 1] == '"') {
      memmove(copy, copy + 1, n - 2);
      copy[n - 2] = 0;
    }
    *(const char **)r->field = copy;
    return 0;
  }
  case T_INT: {
    long x = strtol(v, &end, 0);
    if (end == v || *end || errno) return -1;
    *(long *)r->field = x;
    return 0;
  }
  case T_DOUBLE: {
    double x = strtod(v, &end);
    if (end == v || *end || errno) return -1;
    *(double *)r->field = x;
    return 0;
  }
  case T_SIZE: {
    unsigned long long x;
    char buf[64];
    size_t n = strlen(v);
    /* Defaults arrive quoted ("4G"). */
    if (n >= 2 && n < sizeof buf && v[0] == '"' && v[n - 1] == '"') {
      memcpy(buf, v + 1, n - 2);
      buf[n - 2] = 0;
      v = buf;
    }
    if (parse_size(v, &x)) return -1;
    *(unsigned long long *)r->field = x;
    return 0;
  }
  case T_BOOL:
    if (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes"))
      *(int *)r->field = 1;
    else if (!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "no"))
      *(int *)r->field = 0;
    else
      return -1;
    return 0;
  }
  return -1;
}

static void set_defaults(void) {
  for (size_t i = 0; i < NROWS; i++)
    if (set_value(&rows[i], rows[i].def, i)) KC_INTERNAL_ERROR("bad default for %s", rows[i].name);
}

static int range_ok(const struct opt_row *r) {
  if (r->field == &kc_opt.sample) return kc_opt.sample >= 0 && kc_opt.sample <= 1;
  if (r->field == &kc_opt.trace) return kc_opt.trace >= 0 && kc_opt.trace <= 2;
  if (r->field == &kc_opt.time_budget) return kc_opt.time_budget >= 0 && kc_opt.time_budget <= 1;
  if (r->field == &kc_opt.python_stack) return kc_opt.python_stack >= 0 && kc_opt.python_stack <= 2;
  if (r->field == &kc_opt.check_first) return kc_opt.check_first >= 0;
  if (r->field == &kc_opt.determinism_runs) return kc_opt.determinism_runs >= 1;
  if (r->field == &kc_opt.race_runs) return kc_opt.race_runs >= 1;
  if (r->field == &kc_opt.green_sms) return kc_opt.green_sms >= 1;
  if (r->field == &kc_opt.launch_skip) return kc_opt.launch_skip >= 0;
  if (r->field == &kc_opt.exitcode) return kc_opt.exitcode >= 0 && kc_opt.exitcode <= 255;
  return 1;
}

int kc_options_parse(const char *spec, const char *source, int reset) {
  if (reset) set_defaults();
  if (!spec) return 0;
  int problems = 0;
  char *copy = strdup(spec);
  if (!copy) return 1;
  char *save = NULL;
  for (char *tok = strtok_r(copy, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
    if (!*tok) continue;
    char *eq = strchr(tok, '=');
    if (!eq) {
      kc_log_printf(KC_LOG_WARN, "%s: '%s' is not key=value; ignored", source, tok);
      problems++;
      continue;
    }
    *eq = 0;
    const char *key = tok, *val = eq + 1;
    size_t i;
    for (i = 0; i < NROWS; i++)
      if (!strcmp(rows[i].name, key)) break;
    if (i == NROWS) {
      kc_log_printf(KC_LOG_WARN, "%s: unknown option '%s' (did you mean '%s'?); ignored", source,
                    key, nearest_option(key));
      problems++;
      continue;
    }
    /* Keep the old value if the new one is bad. */
    struct kc_options saved = kc_opt;
    char *saved_owned = owned[i] ? strdup(owned[i]) : NULL;
    if (set_value(&rows[i], val, i) || !range_ok(&rows[i])) {
      kc_opt = saved;
      if (rows[i].type == T_STR && saved_owned) {
        free(owned[i]);
        owned[i] = saved_owned;
        *(const char **)rows[i].field = saved_owned;
        saved_owned = NULL;
      }
      kc_log_printf(KC_LOG_WARN, "%s: bad value '%s' for option '%s'; keeping the current value",
                    source, val, key);
      problems++;
    }
    free(saved_owned);
  }
  free(copy);
  return problems;
}

/* Environment variables kcheck reads; any other KCHECK_* is a typo. */
static const char *const known_env[] = {"KCHECK_OPTIONS", "KCHECK_LIB", "KCHECK_TEST", NULL};

extern char **environ;

static int check_env(void) {
  int problems = 0;
  for (char **e = environ; e && *e; e++) {
    if (strncmp(*e, "KCHECK_", 7)) continue;
    const char *eq = strchr(*e, '=');
    size_t n = eq ? (size_t)(eq - *e) : strlen(*e);
    char name[128];
    if (n >= sizeof name) n = sizeof name - 1;
    memcpy(name, *e, n);
    name[n] = 0;
    int known = 0;
    for (const char *const *k = known_env; *k; k++)
      known |= !strcmp(*k, name);
    if (known) continue;
    /* KCHECK_TRACE=1 most likely means the option trace=1. */
    char lower[128];
    const char *suffix = name + 7; /* after "KCHECK_" */
    size_t j;
    for (j = 0; j < sizeof lower - 1 && suffix[j]; j++)
      lower[j] = (char)tolower((unsigned char)suffix[j]);
    lower[j] = 0;
    const char *opt = nearest_option(lower);
    if (kc_edit_distance(lower, opt) <= 2)
      kc_log_printf(KC_LOG_WARN,
                    "unknown variable %s (did you mean KCHECK_OPTIONS=%s=...?); ignored", name,
                    opt);
    else
      kc_log_printf(KC_LOG_WARN, "unknown variable %s (did you mean KCHECK_OPTIONS?); ignored",
                    name);
    problems++;
  }
  return problems;
}

int kc_options_init(void) {
  set_defaults();
  int problems = kc_options_parse(getenv("KCHECK_OPTIONS"), "KCHECK_OPTIONS", 0);
  problems += check_env();
  kc_verbosity = (int)kc_opt.verbosity;
  return problems;
}

void kc_options_print_help(FILE *out) {
  static const char *const tnames[] = {"string", "int", "double", "size", "bool"};
  fprintf(out, "kcheck: KCHECK_OPTIONS=key=value:key=value...\n");
  for (size_t i = 0; i < NROWS; i++)
    fprintf(out, "kcheck:   %-22s %-6s default %-10s %s\n", rows[i].name, tnames[rows[i].type],
            rows[i].def, rows[i].help);
}

json_t *kc_options_to_json(void) {
  json_t *o = json_object();
  for (size_t i = 0; i < NROWS; i++) {
    const struct opt_row *r = &rows[i];
    json_t *v = NULL;
    switch (r->type) {
    case T_STR: v = json_string(*(const char **)r->field); break;
    case T_INT: v = json_integer(*(long *)r->field); break;
    case T_DOUBLE: v = json_real(*(double *)r->field); break;
    case T_SIZE: v = json_integer((json_int_t) * (unsigned long long *)r->field); break;
    case T_BOOL: v = json_boolean(*(int *)r->field); break;
    }
    json_object_set_new(o, r->name, v);
  }
  return o;
}
