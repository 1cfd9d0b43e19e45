/* contract/attrs.c — contract attrs (attrs.def) parsed into typed values:
 * one parser for the YAML loader and for the judge of torch ops. */
#include "attrs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "formats.h"
#include "ops.h"
#include "oracle.h"

#define KC_ON(cls) (1u << OC_CLASS_##cls)
static const struct kc_attr_def defs[] = {
#define KC_ATTR(id, name, type, classes, values) {name, KC_AT_##type, classes, values},
#include "attrs.def"
};
#undef KC_ON

static const char *const names[] = {
#define KC_ATTR(id, name, type, classes, values) name,
#include "attrs.def"
    NULL};

const struct kc_attr_def *kc_attr_def(enum kc_attr_id id) {
  return (unsigned)id < KC_ATTR_COUNT ? &defs[id] : NULL;
}

int kc_attr_find(const char *name) {
  for (int i = 0; name && i < KC_ATTR_COUNT; i++)
    if (!strcmp(defs[i].name, name)) return i;
  return -1;
}

const char *const *kc_attr_names(void) { return names; }

/* The index of word w (length len) in the space-separated list, -1 if none. */
static int word_index(const char *list, const char *w) {
  size_t wl = strlen(w);
  int k = 0;
  for (const char *p = list; *p; k++) {
    while (*p == ' ')
      p++;
    size_t l = strcspn(p, " ");
    if (l && l == wl && !strncmp(p, w, l)) return k;
    p += l;
  }
  return -1;
}

int kc_attr_parse(enum kc_attr_id id, const char *text, struct kc_attr_val *out, char *why,
                  size_t n) {
  const struct kc_attr_def *d = kc_attr_def(id);
  struct kc_attr_val v = {.set = 1};
  char *end = NULL;
  int ok = 0;
  if (!d || !text) return -1;
  switch (d->type) {
  case KC_AT_BOOL:
    /* YAML 1.1 spells booleans in several ways; Python's str() gives True. */
    if (!strcasecmp(text, "true") || !strcmp(text, "1"))
      v.b = 1, ok = 1;
    else if (!strcasecmp(text, "false") || !strcmp(text, "0"))
      v.b = 0, ok = 1;
    if (!ok) snprintf(why, n, "true or false");
    break;
  case KC_AT_INT:
    errno = 0;
    v.i = strtoll(text, &end, 0);
    ok = end != text && !*end && !errno;
    v.f = (double)v.i;
    if (!ok) snprintf(why, n, "an integer");
    break;
  case KC_AT_FLOAT:
    v.f = strtod(text, &end);
    ok = end != text && !*end;
    if (!ok) snprintf(why, n, "a number");
    break;
  case KC_AT_ACT:
    v.e = oc_act_parse(text);
    ok = v.e >= 0;
    if (!ok) snprintf(why, n, "none, relu, gelu, gelu_tanh, silu, sigmoid or tanh");
    break;
  case KC_AT_FORMAT:
    v.e = oc_format_parse(text);
    ok = v.e >= 0;
    if (!ok) snprintf(why, n, "a float format (fp32, bf16, ...)");
    break;
  case KC_AT_ENUM:
    v.e = word_index(d->values, text);
    ok = v.e >= 0;
    if (!ok) snprintf(why, n, "one of: %s", d->values);
    break;
  case KC_AT_INTS: /* "2" or "2,1": comma-separated, no spaces (the k=v text splits on them) */
    for (const char *q = text; ok >= 0;) {
      errno = 0;
      long long x = strtoll(q, &end, 0);
      if (end == q || errno || v.ni == KC_ATTR_INTS_MAX || (*end && *end != ',')) {
        ok = -1;
        break;
      }
      v.iv[v.ni++] = x;
      if (!*end) {
        ok = 1;
        break;
      }
      q = end + 1;
    }
    ok = ok > 0;
    v.i = v.iv[0];
    v.f = (double)v.i;
    if (!ok) snprintf(why, n, "integers separated by commas, at most %d", KC_ATTR_INTS_MAX);
    break;
  }
  if (!ok) return -1;
  *out = v;
  return 0;
}

long long kc_attr_ints(const struct kc_attrs *a, enum kc_attr_id id, int d, long long dflt,
                       int *ok) {
  if (ok) *ok = 1;
  if (!a || !a->v[id].set) return dflt;
  const struct kc_attr_val *v = &a->v[id];
  if (v->ni == 1) return v->iv[0];
  if (d >= 0 && d < v->ni) return v->iv[d];
  if (ok) *ok = 0;
  return -1;
}

int kc_attr_applies(enum kc_attr_id id, int cls) {
  const struct kc_attr_def *d = kc_attr_def(id);
  return d && cls >= 0 && cls < 32 && (d->classes >> cls & 1u);
}

int kc_attrs_parse_kv(const char *kv, struct kc_attrs *a, char *err, size_t n) {
  memset(a, 0, sizeof *a);
  for (const char *p = kv; p && *p;) {
    while (*p == ' ')
      p++;
    size_t len = strcspn(p, " ");
    const char *eq = memchr(p, '=', len);
    if (eq) {
      char key[64], val[128];
      snprintf(key, sizeof key, "%.*s", (int)(eq - p), p);
      snprintf(val, sizeof val, "%.*s", (int)(len - (size_t)(eq - p) - 1), eq + 1);
      int id = kc_attr_find(key);
      char why[128];
      if (id >= 0 && kc_attr_parse((enum kc_attr_id)id, val, &a->v[id], why, sizeof why)) {
        snprintf(err, n, "bad value '%s' for attr '%s' (expected %s)", val, key, why);
        return -1;
      }
    }
    p += len;
  }
  return 0;
}

int kc_attr_bool(const struct kc_attrs *a, enum kc_attr_id id, int dflt) {
  return a && a->v[id].set ? a->v[id].b : dflt;
}

double kc_attr_num(const struct kc_attrs *a, enum kc_attr_id id, double dflt) {
  return a && a->v[id].set ? a->v[id].f : dflt;
}

int kc_attr_enum(const struct kc_attrs *a, enum kc_attr_id id, int dflt) {
  return a && a->v[id].set ? a->v[id].e : dflt;
}
