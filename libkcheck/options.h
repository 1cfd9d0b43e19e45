/* libkcheck/options.h — the parsed KCHECK_OPTIONS. kc_opt holds one typed
 * member per row of options.def. */
#ifndef KC_OPTIONS_H
#define KC_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

typedef const char *kc_opt_STR;
typedef long kc_opt_INT;
typedef double kc_opt_DOUBLE;
typedef unsigned long long kc_opt_SIZE;
typedef int kc_opt_BOOL;

struct kc_options {
#define KC_OPT(type, name, def, help) kc_opt_##type name;
#include "options.def"
#undef KC_OPT
};

extern struct kc_options kc_opt;

/* Parses `spec` (key=value pairs separated by ':'); `source` names where it
 * came from in messages. Returns the number of problems found. Starts from
 * the defaults when reset is set. */
int kc_options_parse(const char *spec, const char *source, int reset);
/* Reads KCHECK_OPTIONS and checks for mistyped KCHECK_* variables. Returns
 * the number of problems (fatal when strict=1: the caller exits). */
int kc_options_init(void);
/* Prints the option table (help=1). */
void kc_options_print_help(FILE *out);
/* Options as "key=value" pairs into a JSON object (for the run record). */
struct json_t;
struct json_t *kc_options_to_json(void);
/* Edit distance, for "did you mean" hints. */
size_t kc_edit_distance(const char *a, const char *b);

#endif
