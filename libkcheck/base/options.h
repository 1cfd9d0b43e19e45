/* libkcheck/base/options.h — the parsed KCHECK_OPTIONS. kc_opt holds one typed
 * member per row of options.def; other layers register tables of rows in
 * the same format (gates/gate_options.def, contract/contract_options.def)
 * for their own structs, and one parser serves all of them. */
#ifndef KC_OPTIONS_H
#define KC_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

typedef const char *kc_opt_STR;
typedef long kc_opt_INT;
typedef double kc_opt_DOUBLE;
typedef unsigned long long kc_opt_SIZE;
typedef int kc_opt_BOOL;

/* An option's row: KC_OPT(type, name, default, min, max, help) of a .def
 * file. min and max bound numeric values (inclusive); KC_ANY: no bound. */
#define KC_ANY __builtin_nan("")
enum kc_opt_type { KC_OT_STR, KC_OT_INT, KC_OT_DOUBLE, KC_OT_SIZE, KC_OT_BOOL };
struct kc_opt_row {
  const char *name;
  enum kc_opt_type type;
  const char *def; /* default as text: parsed like a user value */
  double min, max; /* NaN: unbounded */
  const char *help;
  void *field; /* a kc_opt_<type> */
};
#define KC_OPT_STRINGIFY_(x) #x
#define KC_OPT_STRINGIFY(x) KC_OPT_STRINGIFY_(x)
/* A struct kc_opt_row initializer for a row of a .def whose fields live in
 * the struct `store`; the member declaration of the same row. */
#define KC_OPT_ROW(store, type, name, def, min, max, help)                                         \
  {#name, KC_OT_##type, KC_OPT_STRINGIFY(def), (double)(min), (double)(max), help, &(store).name},
#define KC_OPT_MEMBER(type, name, def, min, max, help) kc_opt_##type name;

struct kc_options {
#define KC_OPT KC_OPT_MEMBER
#include "options.def"
};

extern struct kc_options kc_opt;

/* Adds a table of rows after the core's (for parsing, help and the run
 * record). Called from constructors, before any parse; the rows must live
 * for the process. 0, or -1 when the table of tables is full. */
int kc_options_register(const struct kc_opt_row *rows, size_t n);

/* Adds a check run after KCHECK_OPTIONS is parsed, for values a row's
 * range cannot describe (list items, regexes); it warns and returns the
 * number of problems (fatal with strict=1). 0, or -1 when full. */
int kc_options_register_check(int (*check)(void));

/* A problem that would leave checks off that the user asked for (an
 * unknown entry of a list option, a list that names nothing, a filter that
 * matches nothing, a suppressions file that cannot be read): logged as one
 * error line ending "; exiting", and counted. The caller of
 * kc_options_init ends the process before any kernel runs when the count
 * is not 0, strict=1 or not: such a run would read as a pass. */
void kc_options_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Fatal problems since the last kc_options_init (or reset). */
int kc_options_fatal_count(void);
void kc_options_fatal_reset(void);

/* The names a ','-separated list option accepts: name_at(0..n) and extra
 * words (NULL-terminated, may be NULL) such as "all" or "none". */
struct kc_list_spec {
  const char *option; /* the option's name, for messages */
  const char *noun;   /* what an entry is ("gate", "race strategy") */
  const char *(*name_at)(size_t i);
  size_t n;
  const char *const *words;
};
/* Parses value once: the index of each entry among the names into idx (in
 * order, repeats dropped; idx holds n), bit w of *words_seen for each extra
 * word. Empty entries (a trailing ',') are skipped. Returns the number of
 * names, or -1 after a kc_options_fatal line for each unknown entry, naming
 * the nearest name and every accepted one. */
int kc_options_list(const struct kc_list_spec *s, const char *value, int *idx,
                    unsigned *words_seen);

/* Parses `spec` (key=value pairs separated by ':'); `source` names where it
 * came from in messages. Returns the number of problems found. Starts from
 * the defaults when reset is set. */
int kc_options_parse(const char *spec, const char *source, int reset);
/* spec parsed from the defaults with every check a run makes of it,
 * without starting anything (the front end asks before it starts a
 * program: a fatal list problem then costs no run). The number of fatal
 * problems, each printed on its line. */
int kc_options_validate(const char *spec);
/* Reads KCHECK_OPTIONS and checks for mistyped KCHECK_* variables. Returns
 * the number of problems (fatal when strict=1: the caller exits). */
int kc_options_init(void);
/* 1 when a setting gave the option whose field this is a value (even one
 * equal to its default), 0 when it holds its default. */
int kc_option_given(const void *field);
/* Prints the option table (help=1). */
void kc_options_print_help(FILE *out);
/* Options as "key=value" pairs into a JSON object (for the run record). */
struct json_t;
struct json_t *kc_options_to_json(void);
/* Edit distance, for "did you mean" hints. */
size_t kc_edit_distance(const char *a, const char *b);

#endif
