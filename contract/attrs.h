/* contract/attrs.h — contract attrs as typed values (contract/attrs.def):
 * parsed once from their text, read by the judge by id. */
#ifndef KC_ATTRS_H
#define KC_ATTRS_H

#include <stddef.h>

enum kc_attr_id {
#define KC_ATTR(id, name, type, classes, values) KC_ATTR_##id,
#include "attrs.def"
  KC_ATTR_COUNT
};

enum kc_attr_type {
  KC_AT_BOOL,
  KC_AT_INT,
  KC_AT_FLOAT,
  KC_AT_ACT,
  KC_AT_FORMAT,
  KC_AT_ENUM,
  KC_AT_INTS
};

#define KC_ATTR_INTS_MAX 3 /* INTS: one integer per spatial dim of a convolution */

struct kc_attr_def {
  const char *name;
  enum kc_attr_type type;
  unsigned classes;   /* 1u << enum oc_op_class, or'ed */
  const char *values; /* ENUM: its words */
};

/* One attr's value: set, and the member of its type (BOOL: b; INT: i;
 * FLOAT: f; ACT, FORMAT, ENUM: e, the oracle's enum or the word's index;
 * INTS: ni integers in iv, i and f the first). */
struct kc_attr_val {
  int set;
  int b, e;
  long long i;
  double f;
  int ni;
  long long iv[KC_ATTR_INTS_MAX];
};
struct kc_attrs {
  struct kc_attr_val v[KC_ATTR_COUNT];
};

const struct kc_attr_def *kc_attr_def(enum kc_attr_id id);
/* The id of attr `name`, -1 when unknown. */
int kc_attr_find(const char *name);
/* Every attr name, NULL-terminated (for listings and suggestions). */
const char *const *kc_attr_names(void);
/* Parses text as attr id's value into *out. 0, or -1 with what was
 * expected in why. */
int kc_attr_parse(enum kc_attr_id id, const char *text, struct kc_attr_val *out, char *why,
                  size_t n);
/* Whether attr id applies to ops of class cls (enum oc_op_class). */
int kc_attr_applies(enum kc_attr_id id, int cls);
/* Parses "k=v k=v" into a: known keys typed, other keys (the binding's
 * sampling settings) ignored. 0, or -1 with why in err for a bad value. */
int kc_attrs_parse_kv(const char *kv, struct kc_attrs *a, char *err, size_t n);
/* Typed reads with a default when the attr is absent: a BOOL, an INT or
 * FLOAT as a number, an ACT/FORMAT/ENUM index. */
int kc_attr_bool(const struct kc_attrs *a, enum kc_attr_id id, int dflt);
double kc_attr_num(const struct kc_attrs *a, enum kc_attr_id id, double dflt);
int kc_attr_enum(const struct kc_attrs *a, enum kc_attr_id id, int dflt);
/* An INTS attr's value for dim d: its d-th integer, its only one when it
 * holds one (for every dim), dflt when absent; -1 (with *ok 0) when it
 * holds several but not d + 1. */
long long kc_attr_ints(const struct kc_attrs *a, enum kc_attr_id id, int d, long long dflt,
                       int *ok);

#endif
