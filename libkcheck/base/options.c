/* libkcheck/base/options.c — KCHECK_OPTIONS parsing in the style of ASAN_OPTIONS:
 * tables of typed rows (the core's, and those other layers register), values
 * checked against the rows' ranges, warnings with the nearest valid name for
 * unknown keys and KCHECK_* variables, bad values reported with their source. */
#include "options.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "regex_guard.h"

struct kc_options kc_opt;

static const struct kc_opt_row core_rows[] = {
#define KC_OPT(...) KC_OPT_ROW(kc_opt, __VA_ARGS__)
#include "options.def"
};

/* The core's table first, then the registered ones, in registration order. */
#define MAX_TABLES 8
#define MAX_ROWS 128
static struct {
  const struct kc_opt_row *rows;
  size_t n;
} tables[MAX_TABLES] = {{core_rows, sizeof core_rows / sizeof core_rows[0]}};
static size_t ntables = 1, nrows = sizeof core_rows / sizeof core_rows[0];

/* Checks of values a row's type and range cannot express (lists, regexes). */
#define MAX_CHECKS 8
static int (*checks[MAX_CHECKS])(void);
static size_t nchecks;

int kc_options_register_check(int (*check)(void)) {
  if (nchecks == MAX_CHECKS) return -1;
  checks[nchecks++] = check;
  return 0;
}

static int nfatal;

void kc_options_fatal(const char *fmt, ...) {
  char msg[1536];
  va_list ap;
  va_start(ap, fmt);
  // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): va_start just above
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  kc_log_printf(KC_LOG_ERROR, "%s; exiting", msg);
  nfatal++;
}

int kc_options_fatal_count(void) { return nfatal; }
void kc_options_fatal_reset(void) { nfatal = 0; }

int kc_options_list(const struct kc_list_spec *s, const char *value, int *idx,
                    unsigned *words_seen) {
  int count = 0, bad = 0;
  if (words_seen) *words_seen = 0;
  for (const char *p = value; p && *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    int found = -1;
    for (size_t i = 0; len && found < 0 && i < s->n; i++)
      if (strlen(s->name_at(i)) == len && !strncmp(p, s->name_at(i), len)) found = (int)i;
    int word = -1;
    for (int w = 0; len && found < 0 && word < 0 && s->words && s->words[w]; w++)
      if (strlen(s->words[w]) == len && !strncmp(p, s->words[w], len)) word = w;
    if (found >= 0) {
      int seen = 0;
      for (int k = 0; k < count; k++)
        seen |= idx[k] == found;
      if (!seen) idx[count++] = found;
    } else if (word >= 0) {
      if (words_seen) *words_seen |= 1u << word;
    } else if (len) {
      char item[64], accepted[1024] = "";
      snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item ? len : sizeof item - 1), p);
      const char *best = "?";
      size_t bestd = (size_t)-1, at = 0;
      for (int w = 0; s->words && s->words[w]; w++)
        at += (size_t)snprintf(accepted + at, at < sizeof accepted ? sizeof accepted - at : 0,
                               "%s%s", at ? ", " : "", s->words[w]);
      for (size_t i = 0; i < s->n; i++) {
        size_t d = kc_edit_distance(item, s->name_at(i));
        if (d < bestd) bestd = d, best = s->name_at(i);
        if (at < sizeof accepted)
          at += (size_t)snprintf(accepted + at, sizeof accepted - at, "%s%s", at ? ", " : "",
                                 s->name_at(i));
      }
      kc_options_fatal("KCHECK_OPTIONS: %s: unknown %s '%s' (did you mean '%s'?); accepted: %s",
                       s->option, s->noun, item, best, accepted);
      bad++;
    }
    if (!comma) break;
    p = comma + 1;
  }
  return bad ? -1 : count;
}

/* The core's own: the kernel regexes compile, within regex_guard's limits
 * (a pattern that cannot be used would leave every kernel unchecked, or
 * none excluded), and kernel_include, when given, names something. */
static int check_filters(void) {
  const char *const names[] = {"kernel_include_regex", "kernel_exclude_regex"};
  const char *const vals[] = {kc_opt.kernel_include_regex, kc_opt.kernel_exclude_regex};
  for (int i = 0; i < 2; i++) {
    if (!vals[i] || !*vals[i]) continue;
    regex_t re;
    char why[200];
    if (kc_regex_compile(&re, vals[i], why, sizeof why))
      kc_options_fatal("KCHECK_OPTIONS: %s '%.300s' is no usable regex: %s", names[i], vals[i],
                       why);
    else
      regfree(&re);
  }
  if (kc_opt.kernel_include && *kc_opt.kernel_include &&
      strspn(kc_opt.kernel_include, ",") == strlen(kc_opt.kernel_include))
    kc_options_fatal("KCHECK_OPTIONS: kernel_include='%s' names no kernel (it would check "
                     "none; leave it out to check every kernel)",
                     kc_opt.kernel_include);
  return 0;
}

int kc_options_register(const struct kc_opt_row *rows, size_t n) {
  if (ntables == MAX_TABLES || nrows + n > MAX_ROWS) return -1;
  tables[ntables].rows = rows, tables[ntables].n = n;
  ntables++, nrows += n;
  return 0;
}

/* Row k of all the tables (0 <= k < nrows). */
static const struct kc_opt_row *row_at(size_t k) {
  for (size_t t = 0; t < ntables; k -= tables[t].n, t++)
    if (k < tables[t].n) return &tables[t].rows[k];
  return NULL;
}

/* Strings owned by the options (values are copied out of the spec). */
static char *owned[MAX_ROWS];
/* Rows a KCHECK_OPTIONS setting gave a value (not their default): a
 * profile (serving) fills in only what the user left alone. */
static unsigned char given[MAX_ROWS];

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
  for (size_t i = 0; i < nrows; i++) {
    size_t d = kc_edit_distance(key, row_at(i)->name);
    if (d < bestd) bestd = d, best = row_at(i)->name;
  }
  return best;
}

/* A size: a number with an optional K, M, G or T suffix (powers of 1024)
 * and an optional B. Refused: negative, non-finite, a fraction of a byte,
 * and anything that does not fit in 63 bits (it would wrap or become 0). */
static int parse_size(const char *v, unsigned long long *out) {
  char *end;
  errno = 0;
  long double x = strtold(v, &end);
  if (end == v || errno || !isfinite((double)x) || x < 0 || signbit((double)x)) return -1;
  long double mul = 1;
  switch (*end) {
  case 'k':
  case 'K': mul = 1024.0L, end++; break;
  case 'm':
  case 'M': mul = 1024.0L * 1024, end++; break;
  case 'g':
  case 'G': mul = 1024.0L * 1024 * 1024, end++; break;
  case 't':
  case 'T': mul = 1024.0L * 1024 * 1024 * 1024, end++; break;
  default: break;
  }
  if (*end == 'B' || *end == 'b') end++;
  if (*end) return -1;
  long double bytes = x * mul;
  if (bytes >= 9223372036854775808.0L || bytes != floorl(bytes)) return -1;
  *out = (unsigned long long)bytes;
  return 0;
}

/* A row's value, parsed but not yet stored. */
union opt_value {
  const char *s;
  long i;
  double d;
  unsigned long long z;
  int b;
};

/* Parses text as a value of r; -1 when the text is not one. */
static int parse_value(const struct kc_opt_row *r, const char *v, union opt_value *out) {
  char *end;
  errno = 0;
  switch (r->type) {
  case KC_OT_STR: out->s = v; return 0;
  case KC_OT_INT: {
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno) return -1;
    out->i = x;
    return 0;
  }
  case KC_OT_DOUBLE: {
    double x = strtod(v, &end);
    /* inf and nan parse, and NaN would pass every range comparison. */
    if (end == v || *end || errno || !isfinite(x)) return -1;
    out->d = x;
    return 0;
  }
  case KC_OT_SIZE: {
    char buf[64];
    size_t n = strlen(v);
    /* Defaults arrive quoted ("4G"). */
    if (n >= 2 && n < sizeof buf && v[0] == '"' && v[n - 1] == '"') {
      memcpy(buf, v + 1, n - 2);
      buf[n - 2] = 0;
      v = buf;
    }
    return parse_size(v, &out->z);
  }
  case KC_OT_BOOL:
    if (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes"))
      out->b = 1;
    else if (!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "no"))
      out->b = 0;
    else
      return -1;
    return 0;
  }
  return -1;
}

/* Within the row's min and max (numeric rows; NaN bounds are open). */
static int in_range(const struct kc_opt_row *r, const union opt_value *v) {
  double x;
  switch (r->type) {
  case KC_OT_INT: x = (double)v->i; break;
  case KC_OT_DOUBLE: x = v->d; break;
  case KC_OT_SIZE: x = (double)v->z; break;
  default: return 1;
  }
  return !(x < r->min) && !(x > r->max);
}

/* Stores a parsed value into row idx; -1 when out of memory. */
static int store_value(const struct kc_opt_row *r, const union opt_value *v, size_t idx) {
  switch (r->type) {
  case KC_OT_STR: {
    char *copy = strdup(v->s);
    if (!copy) return -1;
    /* The default literal arrives quoted from the .def: strip the quotes. */
    size_t n = strlen(copy);
    if (n >= 2 && copy[0] == '"' && copy[n - 1] == '"') {
      memmove(copy, copy + 1, n - 2);
      copy[n - 2] = 0;
    }
    free(owned[idx]);
    owned[idx] = copy;
    *(const char **)r->field = copy;
    return 0;
  }
  case KC_OT_INT: *(long *)r->field = v->i; return 0;
  case KC_OT_DOUBLE: *(double *)r->field = v->d; return 0;
  case KC_OT_SIZE: *(unsigned long long *)r->field = v->z; return 0;
  case KC_OT_BOOL: *(int *)r->field = v->b; return 0;
  }
  return -1;
}

/* Sets row idx from text; -1 (the row unchanged) when the text is not a
 * valid value within the row's range. */
static int set_value(const struct kc_opt_row *r, const char *text, size_t idx) {
  union opt_value v;
  if (parse_value(r, text, &v) || !in_range(r, &v)) return -1;
  return store_value(r, &v, idx);
}

static void set_defaults(void) {
  memset(given, 0, sizeof given);
  for (size_t i = 0; i < nrows; i++)
    if (set_value(row_at(i), row_at(i)->def, i))
      KC_INTERNAL_ERROR("bad default for %s", row_at(i)->name);
}

/* What a row accepts, for messages: its type and range. */
static void describe(const struct kc_opt_row *r, char *buf, size_t n) {
  static const char *const what[] = {"a string", "an integer", "a finite number",
                                     "a size in bytes (K, M, G, T suffixes)", "0 or 1"};
  int lo = !isnan(r->min), hi = !isnan(r->max);
  if (r->type == KC_OT_STR || r->type == KC_OT_BOOL || (!lo && !hi))
    snprintf(buf, n, "%s", what[r->type]);
  else if (lo && hi)
    snprintf(buf, n, "%s in [%.17g, %.17g]", what[r->type], r->min, r->max);
  else if (lo)
    snprintf(buf, n, "%s >= %.17g", what[r->type], r->min);
  else
    snprintf(buf, n, "%s <= %.17g", what[r->type], r->max);
}

/* The row's value now, as text. */
static void current_text(const struct kc_opt_row *r, char *buf, size_t n) {
  switch (r->type) {
  case KC_OT_STR: snprintf(buf, n, "'%.40s'", *(const char **)r->field); return;
  case KC_OT_INT: snprintf(buf, n, "%ld", *(long *)r->field); return;
  case KC_OT_DOUBLE: snprintf(buf, n, "%.17g", *(double *)r->field); return;
  case KC_OT_SIZE: snprintf(buf, n, "%llu", *(unsigned long long *)r->field); return;
  case KC_OT_BOOL: snprintf(buf, n, "%d", *(int *)r->field); return;
  }
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
    for (i = 0; i < nrows; i++)
      if (!strcmp(row_at(i)->name, key)) break;
    if (i == nrows) {
      kc_log_printf(KC_LOG_WARN, "%s: unknown option '%s' (did you mean '%s'?); ignored", source,
                    key, nearest_option(key));
      problems++;
      continue;
    }
    /* A bad value leaves the old one in place. */
    if (set_value(row_at(i), val, i) == 0) {
      given[i] = 1;
    } else {
      char want[160], cur[64];
      describe(row_at(i), want, sizeof want);
      current_text(row_at(i), cur, sizeof cur);
      kc_log_printf(KC_LOG_WARN, "%s: bad value '%s' for option '%s' (expected %s); keeping %s",
                    source, val, key, want, cur);
      problems++;
    }
  }
  free(copy);
  return problems;
}

int kc_option_given(const void *field) {
  for (size_t i = 0; i < nrows; i++)
    if (row_at(i)->field == field) return given[i];
  return 0;
}

/* Environment variables kcheck reads; any other KCHECK_* is a typo. */
static const char *const known_env[] = {"KCHECK_OPTIONS", "KCHECK_LIB", "KCHECK_PYTHON",
                                        "KCHECK_TEST", NULL};

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

/* verbosity given in spec, so that warnings about the other options already
 * obey it (verbosity=0: errors only). */
static void early_verbosity(const char *spec) {
  for (const char *p = spec; p && (p = strstr(p, "verbosity=")); p++) {
    if (p != spec && p[-1] != ':') continue;
    char *end;
    long v = strtol(p + 10, &end, 10);
    if (end != p + 10 && (*end == ':' || !*end) && v >= 0 && v <= 3) kc_verbosity = (int)v;
  }
}

int kc_options_init(void) {
  set_defaults();
  kc_options_fatal_reset();
  early_verbosity(getenv("KCHECK_OPTIONS"));
  int problems = kc_options_parse(getenv("KCHECK_OPTIONS"), "KCHECK_OPTIONS", 0);
  /* From here on the text goes where log_file says (the parse's own
   * warnings were printed before it was known). */
  if (kc_log_open(kc_opt.log_file)) problems++;
  problems += check_env();
  kc_verbosity = (int)kc_opt.verbosity;
  problems += check_filters();
  for (size_t i = 0; i < nchecks; i++)
    problems += checks[i]();
  return problems;
}

int kc_options_validate(const char *spec) {
  set_defaults();
  kc_options_fatal_reset();
  int saved = kc_verbosity;
  kc_verbosity = 0; /* warnings are the run's to print; fatal lines are errors */
  kc_options_parse(spec, "KCHECK_OPTIONS", 0);
  check_filters();
  for (size_t i = 0; i < nchecks; i++)
    checks[i]();
  kc_verbosity = saved;
  return kc_options_fatal_count();
}

void kc_options_print_help(FILE *out) {
  static const char *const tnames[] = {"string", "int", "double", "size", "bool"};
  fprintf(out, "kcheck: KCHECK_OPTIONS=key=value:key=value...\n");
  for (size_t i = 0; i < nrows; i++) {
    const struct kc_opt_row *r = row_at(i);
    fprintf(out, "kcheck:   %-22s %-6s default %-10s %s\n", r->name, tnames[r->type], r->def,
            r->help);
  }
}

json_t *kc_options_to_json(void) {
  json_t *o = json_object();
  for (size_t i = 0; i < nrows; i++) {
    const struct kc_opt_row *r = row_at(i);
    json_t *v = NULL;
    switch (r->type) {
    case KC_OT_STR: v = json_string(*(const char **)r->field); break;
    case KC_OT_INT: v = json_integer(*(long *)r->field); break;
    case KC_OT_DOUBLE: v = json_real(*(double *)r->field); break;
    case KC_OT_SIZE: v = json_integer((json_int_t) * (unsigned long long *)r->field); break;
    case KC_OT_BOOL: v = json_boolean(*(int *)r->field); break;
    }
    json_object_set_new(o, r->name, v);
  }
  return o;
}
