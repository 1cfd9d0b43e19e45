/* contract/yaml_limits.c — a pass over a contract file's YAML events before
 * it is loaded, so that small inputs cannot make the loader or the walker
 * spend unbounded time or memory: nesting depth and the node count after
 * alias expansion (a "billion laughs" file of a few KB) are bounded. Syntax
 * errors are left to the loader, which reports them with their position. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "contract.h"

struct anchor {
  char *name;
  uint64_t size; /* nodes of the anchored subtree, aliases expanded */
};

struct scan {
  struct anchor *a;
  int na;
  uint64_t frame[KC_CONTRACT_MAX_YAML_DEPTH + 2]; /* nodes counted in each open collection */
  char *frame_anchor[KC_CONTRACT_MAX_YAML_DEPTH + 2];
  int depth;
  uint64_t total;
};

static uint64_t anchor_size(const struct scan *s, const char *name) {
  for (int i = s->na - 1; i >= 0; i--)
    if (!strcmp(s->a[i].name, name)) return s->a[i].size;
  return 1; /* undefined alias: the loader reports it */
}

static void remember(struct scan *s, const char *name, uint64_t size) {
  if (!name) return;
  struct anchor *na = realloc(s->a, (size_t)(s->na + 1) * sizeof *na);
  char *copy = strdup(name);
  if (!na || !copy) {
    free(copy);
    if (na) s->a = na;
    return;
  }
  s->a = na;
  s->a[s->na++] = (struct anchor){copy, size};
  /* the copy belongs to s->a now, freed with the scan */
  // cppcheck-suppress memleak
}

/* Counts n more nodes where the parser is; 0 while within the limit. */
static int add(struct scan *s, uint64_t n) {
  s->total = s->total + n < s->total ? UINT64_MAX : s->total + n;
  if (s->depth > 0) s->frame[s->depth] += n;
  return s->total > KC_CONTRACT_MAX_YAML_NODES;
}

int kc_contract_yaml_check_limits(const char *text, size_t len, int *line, int *col, char *msg,
                                  size_t n) {
  yaml_parser_t p;
  if (!yaml_parser_initialize(&p)) return 0;
  yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
  struct scan s = {0};
  int rc = 0, done = 0;
  while (!done && !rc) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&p, &ev)) break;
    *line = (int)ev.start_mark.line + 1;
    *col = (int)ev.start_mark.column + 1;
    switch (ev.type) {
    case YAML_STREAM_END_EVENT: done = 1; break;
    case YAML_SCALAR_EVENT:
      remember(&s, (const char *)ev.data.scalar.anchor, 1);
      rc = add(&s, 1);
      break;
    case YAML_ALIAS_EVENT: rc = add(&s, anchor_size(&s, (const char *)ev.data.alias.anchor)); break;
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
      const yaml_char_t *anc = ev.type == YAML_SEQUENCE_START_EVENT ? ev.data.sequence_start.anchor
                                                                    : ev.data.mapping_start.anchor;
      if (s.depth + 1 > KC_CONTRACT_MAX_YAML_DEPTH) {
        snprintf(msg, n, "YAML nests deeper than %d levels", KC_CONTRACT_MAX_YAML_DEPTH);
        rc = -1;
        break;
      }
      if (add(&s, 1)) {
        rc = 1;
        break;
      }
      s.depth++;
      s.frame[s.depth] = 1;
      s.frame_anchor[s.depth] = anc ? strdup((const char *)anc) : NULL;
      break;
    }
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
      if (s.depth > 0) {
        uint64_t size = s.frame[s.depth];
        remember(&s, s.frame_anchor[s.depth], size);
        free(s.frame_anchor[s.depth]);
        s.frame_anchor[s.depth] = NULL;
        s.depth--;
        /* The collection's own nodes were counted in total as they came;
         * only its parent's size grows. */
        if (s.depth > 0) s.frame[s.depth] += size - 1;
      }
      break;
    default: break;
    }
    yaml_event_delete(&ev);
  }
  if (rc > 0)
    snprintf(msg, n, "YAML expands to more than %d nodes (aliases of large anchors?)",
             KC_CONTRACT_MAX_YAML_NODES);
  for (int i = 0; i < s.na; i++)
    free(s.a[i].name);
  free(s.a);
  for (int d = 0; d <= KC_CONTRACT_MAX_YAML_DEPTH + 1; d++)
    free(s.frame_anchor[d]);
  yaml_parser_delete(&p);
  return rc ? -1 : 0;
}
