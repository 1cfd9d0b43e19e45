/* libkcheck/base/regex_guard.h — POSIX extended regexes from users (contract
 * kernel patterns, kernel_*_regex options) with a bounded compile cost.
 * glibc's regcomp builds an automaton whose size multiplies with nested or
 * repeated quantifiers: "f++++++++++++++++++++++" alone takes gigabytes. So
 * a pattern is refused before regcomp when it is longer than
 * KC_REGEX_MAX_LEN, repeats a quantified atom or group, repeats more than
 * KC_REGEX_MAX_REPEAT times, or uses a back-reference. */
#ifndef KC_REGEX_GUARD_H
#define KC_REGEX_GUARD_H

#include <regex.h>
#include <stddef.h>

#define KC_REGEX_MAX_LEN 256
#define KC_REGEX_MAX_REPEAT 100

/* 0 when pat is acceptable; else -1 with why (naming the limit) in err. */
int kc_regex_check(const char *pat, char *err, size_t n);
/* kc_regex_check, then regcomp(REG_EXTENDED | REG_NOSUB). 0 on success. */
int kc_regex_compile(regex_t *re, const char *pat, char *err, size_t n);

#endif
