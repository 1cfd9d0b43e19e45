/* contract/contract_api.c — the contract and annotation entries of the
 * public API (include/kcheck.h). Safe to call before kcheck
 * activates and without a driver: nothing here touches CUDA. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/kcheck.h"
#include "contract.h"
#include "export.h"
#include "formats.h"
#include "log.h"
#include "oracle.h"

KC_EXPORT int kcheck_api_version(void) { return KCHECK_API_VERSION; }

KC_EXPORT int kcheck_contract_load(const char *path) {
  if (!path) return -1;
  struct kc_contract_set set = {0};
  int errors = kc_contract_parse_path(path, &set);
  kc_contract_print_diags(&set, "kcheck: ");
  int added = errors ? -1 : kc_contracts_add(&set);
  kc_contract_set_free(&set);
  return added;
}

KC_EXPORT int kcheck_contract_lint(const char *path) {
  if (!path) return 1;
  struct kc_contract_set set = {0};
  int errors = kc_contract_parse_path(path, &set);
  kc_contract_print_diags(&set, "");
  kc_contract_set_free(&set);
  return errors;
}

KC_EXPORT int kcheck_contract_register_yaml(const char *yaml_text, const char *source_name) {
  if (!yaml_text) return -1;
  struct kc_contract_set set = {0};
  int errors = kc_contract_parse_text(yaml_text, strlen(yaml_text),
                                      source_name ? source_name : "<api>", &set);
  kc_contract_print_diags(&set, "kcheck: ");
  int added = errors ? -1 : kc_contracts_add(&set);
  kc_contract_set_free(&set);
  return added;
}

/* ------------------------------------------------------------ annotations */

/* Per-thread state on the heap behind a pthread key: libkcheck.so's static
 * TLS must stay small (initial-exec TLS elsewhere, and `kcheck contract
 * lint` dlopens it, where glibc has little static TLS to spare). */
struct ann_state {
  struct kc_contract_annotation pending; /* being declared (begin..end) */
  struct kc_contract_annotation current; /* in force (after end) */
  int pending_open, current_valid;
  uint64_t serial;
};
static pthread_key_t ann_key;
static pthread_once_t ann_once = PTHREAD_ONCE_INIT;

static void ann_key_init(void) { pthread_key_create(&ann_key, free); }

/* create: allocate when absent; NULL on out-of-memory or when absent. */
static struct ann_state *ann_state(int create) {
  pthread_once(&ann_once, ann_key_init);
  struct ann_state *st = pthread_getspecific(ann_key);
  if (!st && create && (st = calloc(1, sizeof *st)) && pthread_setspecific(ann_key, st)) {
    free(st);
    st = NULL;
  }
  return st;
}

const struct kc_contract_annotation *kc_contract_annotation_current(void) {
  struct ann_state *st = ann_state(0);
  return st && st->current_valid ? &st->current : NULL;
}

/* A profile spec checked by the oracle's parser, as a contract's profile
 * is: front ends refuse a bad one before anything runs. */
KC_EXPORT int kcheck_profile_check(const char *spec, char *err, unsigned long n) {
  struct oc_profile p;
  return oc_profile_parse_err(spec, &p, err, n) ? -1 : 0;
}

KC_EXPORT int kcheck_annotate_begin(const char *op, const char *profile) {
  if (!op || strlen(op) >= sizeof((struct kc_contract_annotation *)0)->op) {
    kc_log_printf(KC_LOG_WARN, "kcheck_annotate_begin: missing or too long op name");
    return -1;
  }
  if (!oc_op_find(op)) {
    kc_log_printf(KC_LOG_WARN, "kcheck_annotate_begin: unknown op '%s'", op);
    return -1;
  }
  struct ann_state *st = ann_state(1);
  if (!st) return -1;
  struct kc_contract_annotation a;
  memset(&a, 0, sizeof a);
  snprintf(a.op, sizeof a.op, "%s", op);
  if (profile && *profile) {
    char err[512];
    if (strlen(profile) >= sizeof a.profile_spec ||
        oc_profile_parse_err(profile, &a.profile, err, sizeof err)) {
      kc_log_printf(KC_LOG_WARN, "kcheck_annotate_begin: bad profile '%s': %s", profile,
                    strlen(profile) >= sizeof a.profile_spec ? "too long" : err);
      return -1;
    }
    snprintf(a.profile_spec, sizeof a.profile_spec, "%s", profile);
    a.has_profile = 1;
  }
  a.serial = ++st->serial;
  st->pending = a;
  st->pending_open = 1;
  st->current_valid = 0; /* a new declaration replaces the one in force */
  return 0;
}

KC_EXPORT int kcheck_annotate_tensor(const char *role, void *ptr, const char *format, int rank,
                                     const long *shape, const long *strides) {
  struct ann_state *st = ann_state(0);
  if (!st || !st->pending_open) {
    kc_log_printf(KC_LOG_WARN, "kcheck_annotate_tensor: no kcheck_annotate_begin before it");
    return -1;
  }
  int r = !role                    ? -1
          : !strcmp(role, "in")    ? KC_ROLE_IN
          : !strcmp(role, "out")   ? KC_ROLE_OUT
          : !strcmp(role, "inout") ? KC_ROLE_INOUT
                                   : -1;
  int fmt = format ? kc_contract_format_parse(format) : -1;
  const char *why = r < 0                                     ? "role must be in, out or inout"
                    : fmt < 0                                 ? "unknown format"
                    : rank < 0 || rank > KC_CONTRACT_MAX_RANK ? "rank must be 0..8"
                    : rank && !shape                          ? "shape is NULL"
                    : st->pending.ntensors >= KC_CONTRACT_ANN_MAX_TENSORS ? "more than 16 tensors"
                                                                          : NULL;
  if (why) {
    kc_log_printf(KC_LOG_WARN, "kcheck_annotate_tensor: %s", why);
    return -1;
  }
  struct kc_contract_ann_tensor *t = &st->pending.t[st->pending.ntensors++];
  t->role = (enum kc_contract_role)r;
  t->ptr = ptr;
  t->format = fmt;
  t->rank = rank;
  long stride = 1;
  for (int i = rank - 1; i >= 0; i--) {
    t->shape[i] = shape[i];
    t->strides[i] = strides ? strides[i] : stride; /* NULL: contiguous row-major */
    stride *= shape[i] > 0 ? shape[i] : 1;
  }
  return 0;
}

KC_EXPORT int kcheck_annotate_end(void) {
  struct ann_state *st = ann_state(0);
  if (!st || !st->pending_open) {
    kc_log_printf(KC_LOG_WARN, "kcheck_annotate_end: no kcheck_annotate_begin before it");
    return -1;
  }
  st->current = st->pending;
  st->current_valid = 1;
  st->pending_open = 0;
  return 0;
}

KC_EXPORT void kcheck_annotate_clear(void) {
  struct ann_state *st = ann_state(0);
  if (!st) return;
  st->pending_open = 0;
  st->current_valid = 0;
}

KC_EXPORT int kcheck_annotation_describe(char *buf, unsigned long n) {
  const struct kc_contract_annotation *a = kc_contract_annotation_current();
  if (!a || !buf || !n) return 0;
  size_t used = (size_t)snprintf(buf, n, "%s profile=%s tensors=%d", a->op,
                                 a->has_profile ? a->profile_spec : "-", a->ntensors);
  static const char *const roles[] = {"in", "out", "inout"};
  for (int i = 0; i < a->ntensors && used < n; i++) {
    const struct kc_contract_ann_tensor *t = &a->t[i];
    used += (size_t)snprintf(buf + used, n - used, " %s:%s:%p:[", roles[t->role],
                             kc_contract_format_name(t->format), t->ptr);
    for (int d = 0; d < t->rank && used < n; d++)
      used += (size_t)snprintf(buf + used, n - used, "%s%ld", d ? "," : "", t->shape[d]);
    for (int d = 0; d < t->rank && used < n; d++)
      used += (size_t)snprintf(buf + used, n - used, "%s%ld", d ? "," : "/", t->strides[d]);
    if (used < n) used += (size_t)snprintf(buf + used, n - used, "]");
  }
  return (int)(used < n ? used : n - 1);
}
