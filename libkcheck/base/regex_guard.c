/* libkcheck/base/regex_guard.c — see regex_guard.h. A single left-to-right scan:
 * brackets and escapes are skipped as atoms; each group remembers whether it
 * holds a quantifier, and a quantifier on such a group (or on another
 * quantifier) is a nested repetition. */
#include "regex_guard.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GROUPS 32

/* Index past a bracket expression starting at s[i] == '['. */
static size_t skip_bracket(const char *s, size_t i) {
  size_t j = i + 1;
  if (s[j] == '^') j++;
  if (s[j] == ']') j++; /* a leading ']' is literal */
  while (s[j] && s[j] != ']') {
    if (s[j] == '[' && (s[j + 1] == ':' || s[j + 1] == '.' || s[j + 1] == '=')) {
      char close = s[j + 1];
      const char *e = strchr(s + j + 2, close);
      j = (e && e[1] == ']') ? (size_t)(e - s) + 2 : j + 1;
      continue;
    }
    j++;
  }
  return s[j] ? j + 1 : j;
}

/* Reads the digits at s[*j] (advancing *j), clamped: an overlong count is
 * still one number, not digits the caller would take for a literal '{'. */
static long count_at(const char *s, size_t *j) {
  long v = 0;
  while (isdigit((unsigned char)s[*j])) {
    if (v < 1000000) v = 10 * v + (s[*j] - '0');
    (*j)++;
  }
  return v;
}

/* Parses a bound at s[i] == '{': "{m}", "{m,}", "{m,n}" and glibc's "{,n}"
 * (0 to n) and "{,}" (0 or more) — regcomp takes all five as repetition, so
 * each must be counted here or "{,30000}" would pass as a literal brace.
 * Returns the index past it and the largest count in *count (1 for an
 * open-ended one: it costs what '*' costs), or 0 when regcomp would not take
 * it as a bound either. */
static size_t bound(const char *s, size_t i, long *count) {
  size_t j = i + 1;
  int has_m = isdigit((unsigned char)s[j]) != 0;
  long m = count_at(s, &j), n = -1;
  if (s[j] == ',') {
    j++;
    if (isdigit((unsigned char)s[j])) n = count_at(s, &j);
  } else if (!has_m) {
    return 0;
  }
  if (s[j] != '}') return 0;
  *count = n > m ? n : m;
  if (*count == 0) *count = 1;
  return j + 1;
}

int kc_regex_check(const char *pat, char *err, size_t n) {
  size_t len = strlen(pat);
  if (len > KC_REGEX_MAX_LEN) {
    snprintf(err, n, "regex is %zu characters, over the limit of %d", len, KC_REGEX_MAX_LEN);
    return -1;
  }
  int quant_in[MAX_GROUPS + 1] = {0}; /* group holds a quantifier */
  int depth = 0;
  /* What the next quantifier applies to: 0 nothing, 1 a plain atom, 2 a
   * quantified atom, 3 a group holding a quantifier. */
  int prev = 0;
  for (size_t i = 0; i < len;) {
    char c = pat[i];
    if (c == '\\') {
      if (isdigit((unsigned char)pat[i + 1]) && pat[i + 1] != '0') {
        snprintf(err, n, "back-references (\\%c) are not allowed: their matching cost is unbounded",
                 pat[i + 1]);
        return -1;
      }
      i += pat[i + 1] ? 2 : 1;
      prev = 1;
    } else if (c == '[') {
      i = skip_bracket(pat, i);
      prev = 1;
    } else if (c == '(') {
      if (++depth > MAX_GROUPS) {
        snprintf(err, n, "regex nests groups deeper than %d", MAX_GROUPS);
        return -1;
      }
      quant_in[depth] = 0;
      i++;
      prev = 0;
    } else if (c == ')') {
      int had = depth > 0 && quant_in[depth];
      if (depth > 0) depth--;
      if (had && depth > 0) quant_in[depth] = 1;
      prev = had ? 3 : 1;
      i++;
    } else if (c == '*' || c == '+' || c == '?' || c == '{') {
      long count = 1;
      size_t next = i + 1;
      if (c == '{') {
        next = bound(pat, i, &count);
        if (!next) { /* a literal '{' */
          i++;
          prev = 1;
          continue;
        }
        if (count > KC_REGEX_MAX_REPEAT) {
          snprintf(err, n, "repetition count %ld over the limit of %d", count, KC_REGEX_MAX_REPEAT);
          return -1;
        }
      }
      if (prev >= 2) {
        snprintf(err, n,
                 "nested repetition at character %zu ('%c' repeats something already "
                 "repeated): its compile cost grows exponentially",
                 i + 1, c);
        return -1;
      }
      if (depth > 0) quant_in[depth] = 1;
      prev = prev ? 2 : 0;
      i = next;
    } else if (c == '|') {
      prev = 0;
      i++;
    } else {
      prev = 1;
      i++;
    }
  }
  return 0;
}

int kc_regex_compile(regex_t *re, const char *pat, char *err, size_t n) {
  if (kc_regex_check(pat, err, n)) return -1;
  int rc = regcomp(re, pat, REG_EXTENDED | REG_NOSUB);
  if (rc) {
    char msg[160];
    regerror(rc, re, msg, sizeof msg);
    snprintf(err, n, "%s", msg);
    return -1;
  }
  return 0;
}
