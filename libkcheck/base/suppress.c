/* libkcheck/base/suppress.c — the suppressions file (suppressions=FILE): lines
 * `gate:kernel-glob[:frame-glob]` that silence known findings. Matching is
 * done where every violation passes (finding.c); suppressed findings are
 * still counted. */
#include "suppress.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "options.h"

#define MAX_RULES 1024
#define MAX_FILE_BYTES (1 << 20)

struct rule {
  char *gate, *kernel, *frame; /* frame may be NULL */
  char where[300];             /* FILE:LINE */
};
static struct rule rules[MAX_RULES];
static int nrules;

/* A ':' that separates fields: not part of a C++ "::". */
static char *field_colon(char *s) {
  for (char *p = s; *p; p++) {
    if (*p != ':') continue;
    if (p[1] == ':') {
      p++;
      continue;
    }
    return p;
  }
  return NULL;
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  size_t n = strlen(s);
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
    s[--n] = 0;
  return s;
}

/* Parses one line into rules[nrules]; 0 ok or blank, -1 malformed. */
static int parse_line(char *line, const char *file, int lineno) {
  char *s = trim(line);
  if (!*s || *s == '#') return 0;
  char *c1 = field_colon(s);
  if (!c1) return -1;
  *c1 = 0;
  char *kernel = c1 + 1, *frame = NULL;
  char *c2 = field_colon(kernel);
  if (c2) {
    *c2 = 0;
    frame = trim(c2 + 1);
  }
  char *gate = trim(s);
  kernel = trim(kernel);
  if (!*gate || !*kernel || (frame && !*frame)) return -1;
  if (nrules == MAX_RULES) return -2;
  struct rule *r = &rules[nrules++];
  r->gate = strdup(gate);
  r->kernel = strdup(kernel);
  r->frame = frame ? strdup(frame) : NULL;
  snprintf(r->where, sizeof r->where, "%s:%d", file, lineno);
  return 0;
}

static int load_one(const char *path);

int kc_suppress_load(const char *paths) {
  if (!paths || !*paths) return 0;
  /* ','-separated files: the user's and shipped lists together. */
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", paths);
  int problems = 0;
  char *save = NULL;
  for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save))
    problems += load_one(p);
  return problems;
}

static int load_one(const char *path) {
  struct stat st;
  if (stat(path, &st) || !S_ISREG(st.st_mode) || st.st_size > MAX_FILE_BYTES) {
    kc_options_fatal("suppressions=%s: not a readable regular file of at most %d bytes", path,
                     MAX_FILE_BYTES);
    return 1;
  }
  FILE *f = fopen(path, "r");
  if (!f) {
    kc_options_fatal("suppressions=%s: cannot open it", path);
    return 1;
  }
  /* Whole lines, however long (the file is at most MAX_FILE_BYTES): a
   * fixed buffer split a long line, and the tail of a comment became a
   * rule. --gen-suppressions writes lines as long as the C++ names. */
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  int lineno = 0, problems = 0;
  while ((len = getline(&line, &cap, f)) >= 0) {
    lineno++;
    /* A NUL would end the line early, its rest silently ignored. */
    int r = memchr(line, 0, (size_t)len) ? -3 : parse_line(line, path, lineno);
    if (r == -1) {
      kc_options_fatal("%s:%d: error: expected gate:kernel-glob[:frame-glob]", path, lineno);
      problems++;
    } else if (r == -3) {
      kc_options_fatal("%s:%d: error: a NUL byte in the line", path, lineno);
      problems++;
    } else if (r == -2) {
      kc_options_fatal("%s:%d: error: more than %d suppressions", path, lineno, MAX_RULES);
      problems++;
      break;
    }
  }
  free(line);
  fclose(f);
  return problems;
}

/* A pattern without wildcards matches as a substring, like kernel_include. */
static int glob_match(const char *pat, const char *s) {
  if (!s) return 0;
  if (!strpbrk(pat, "*?[")) return strstr(s, pat) != NULL;
  return fnmatch(pat, s, 0) == 0;
}

static int frame_matches(const char *pat, json_t *stack) {
  json_t *fr;
  size_t i;
  json_array_foreach(json_object_get(stack, "python"), i, fr) {
    const char *file = json_string_value(json_object_get(fr, "file"));
    const char *fn = json_string_value(json_object_get(fr, "function"));
    if (glob_match(pat, file) || glob_match(pat, fn)) return 1;
  }
  json_array_foreach(json_object_get(stack, "host"), i, fr) {
    const char *sym = json_string_value(json_object_get(fr, "symbol"));
    const char *mod = json_string_value(json_object_get(fr, "module"));
    const char *file = json_string_value(json_object_get(fr, "file"));
    if (glob_match(pat, sym) || glob_match(pat, mod) || glob_match(pat, file)) return 1;
  }
  return 0;
}

const char *kc_suppress_match(json_t *rec) {
  const char *gate = json_string_value(json_object_get(rec, "gate"));
  const char *kname = json_string_value(json_object_get(rec, "kernel_name"));
  const char *mangled = json_string_value(json_object_get(rec, "kernel_mangled"));
  for (int i = 0; i < nrules; i++) {
    const struct rule *r = &rules[i];
    if (!glob_match(r->gate, gate) && strcmp(r->gate, "*")) continue;
    if (!glob_match(r->kernel, kname) && !glob_match(r->kernel, mangled)) continue;
    if (r->frame && !frame_matches(r->frame, json_object_get(rec, "stack"))) continue;
    return r->where;
  }
  return NULL;
}

int kc_suppress_count(void) { return nrules; }
