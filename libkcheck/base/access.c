/* libkcheck/base/access.c — conflicting pairs in a kernel run's access log
 * (access.h). Accesses are split into the 4-byte words they touch and
 * grouped by word (shared words also by block: each block has its own
 * shared memory); each group with a plain write, or with a plain access
 * and an atomic or strong one, is searched for a pair nothing orders.
 * Orderings between blocks come from release points (a fence, then an
 * atomic or strong write of a sync word) and acquire points (an atomic or
 * strong read of it), collected per thread in program order. */
#include "access.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Pair checks per launch; past it the remaining words are not judged. */
#define PAIR_BUDGET (64u << 20)
/* Points of one (block, word) looked at per ordering question. */
#define POINT_SCAN 4096

struct touch {
  uint64_t word; /* addr / 4 */
  unsigned block, epoch, who, site, seq;
  unsigned key_block; /* shared: the block; global: 0 */
  uint64_t addr;      /* the access's own first byte (its size: size_of(who)) */
};

/* An ordering point: a release (fence seq/epoch before a sync write) or
 * an acquire (the sync read's seq/epoch), of block's thread on word. */
struct point {
  uint64_t word;
  unsigned block, tid, seq, epoch;
};

static unsigned tid_of(unsigned who) { return who & 0xffff; }
static unsigned kind_of(unsigned who) { return (who >> 16) & 0xf; }
static unsigned size_of(unsigned who) { return (who >> 20) & 0x1f; }
static int global_of(unsigned who) { return (who & KC_ACC_GLOBAL) != 0; }
static unsigned bar_of(unsigned epoch) { return epoch & 0xffff; }
static int is_read(unsigned k) { return k == KC_ACC_READ || k == KC_ACC_SREAD; }
/* atomic or strong: such accesses never race with each other (global) */
static int is_sync(unsigned k) {
  return k == KC_ACC_ATOMIC || k == KC_ACC_SREAD || k == KC_ACC_SWRITE;
}

static int by_key(const void *a, const void *b) {
  const struct touch *x = a, *y = b;
  int gx = global_of(x->who), gy = global_of(y->who);
  if (gx != gy) return gx < gy ? -1 : 1;
  if (x->key_block != y->key_block) return x->key_block < y->key_block ? -1 : 1;
  if (x->word != y->word) return x->word < y->word ? -1 : 1;
  return 0;
}

static int by_point(const void *a, const void *b) {
  const struct point *x = a, *y = b;
  if (x->block != y->block) return x->block < y->block ? -1 : 1;
  if (x->word != y->word) return x->word < y->word ? -1 : 1;
  return 0;
}

/* Program order of the log's global events per thread. */
static int by_thread(const void *a, const void *b) {
  const struct kc_access *x = *(const struct kc_access *const *)a;
  const struct kc_access *y = *(const struct kc_access *const *)b;
  if (x->block != y->block) return x->block < y->block ? -1 : 1;
  if (tid_of(x->who) != tid_of(y->who)) return tid_of(x->who) < tid_of(y->who) ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

struct points {
  struct point *p;
  size_t n;
};

/* [lo, hi) of pts with (block, word). */
static size_t range(const struct points *pts, unsigned block, uint64_t word, size_t *hi) {
  size_t lo = 0, h = pts->n;
  while (lo < h) {
    size_t mid = (lo + h) / 2;
    const struct point *m = &pts->p[mid];
    if (m->block < block || (m->block == block && m->word < word))
      lo = mid + 1;
    else
      h = mid;
  }
  size_t e = lo;
  while (e < pts->n && e < lo + POINT_SCAN && pts->p[e].block == block && pts->p[e].word == word)
    e++;
  *hi = e;
  return lo;
}

struct ctx {
  struct points rel, acq;
};

/* Does a release of a's block on word S cover a, and an acquire of b's
 * block on S cover b? */
static int ordered(const struct ctx *c, const struct touch *a, const struct touch *b) {
  unsigned ta = tid_of(a->who), tb = tid_of(b->who);
  size_t rhi;
  /* a's block's release points, one sync word after another (bounded) */
  size_t i = range(&c->rel, a->block, 0, &rhi);
  for (size_t words = 0; i < c->rel.n && c->rel.p[i].block == a->block && words < POINT_SCAN;
       words++) {
    uint64_t s = c->rel.p[i].word;
    int covers = 0;
    size_t j = i;
    for (; j < c->rel.n && c->rel.p[j].block == a->block && c->rel.p[j].word == s; j++) {
      const struct point *r = &c->rel.p[j];
      if ((r->tid == ta && a->seq < r->seq) || bar_of(a->epoch) < bar_of(r->epoch)) covers = 1;
    }
    i = j;
    if (!covers) continue;
    size_t ahi, alo = range(&c->acq, b->block, s, &ahi);
    for (size_t k = alo; k < ahi; k++) {
      const struct point *q = &c->acq.p[k];
      if ((q->tid == tb && q->seq < b->seq) || bar_of(q->epoch) < bar_of(b->epoch)) return 1;
    }
  }
  return 0;
}

/* Do a's and b's bytes overlap? Two threads storing the two halves of one
 * word (16-bit elements, one per thread, as Triton's layouts store them)
 * share the word and not a byte. */
static int overlap(const struct touch *a, const struct touch *b) {
  uint64_t sa = size_of(a->who) ? size_of(a->who) : 1, sb = size_of(b->who) ? size_of(b->who) : 1;
  return a->addr < b->addr + sb && b->addr < a->addr + sa;
}

static int conflict(const struct ctx *c, int cross_block, const struct touch *a,
                    const struct touch *b) {
  unsigned ka = kind_of(a->who), kb = kind_of(b->who);
  int global = global_of(a->who);
  if (!overlap(a, b)) return 0;
  if (a->block == b->block && tid_of(a->who) == tid_of(b->who)) return 0; /* program order */
  if (is_read(ka) && is_read(kb)) return 0;
  if (ka == KC_ACC_ATOMIC && kb == KC_ACC_ATOMIC) return 0;
  if (global && is_sync(ka) && is_sync(kb)) return 0;
  if (a->block == b->block) {
    if (bar_of(a->epoch) != bar_of(b->epoch)) return 0;
    if (tid_of(a->who) / 32 == tid_of(b->who) / 32 && (a->epoch >> 16) != (b->epoch >> 16))
      return 0;
    return 1;
  }
  if (!cross_block) return 0;
  return !ordered(c, a, b) && !ordered(c, b, a);
}

static struct kc_access as_access(const struct touch *t) {
  return (struct kc_access){4 * t->word, t->who, t->epoch, t->block, t->site, t->seq, 0};
}

/* Release and acquire points of the log's global events. */
static int collect(const struct kc_access *rec, size_t n, struct ctx *c, size_t *releases) {
  const struct kc_access **ev = malloc((n ? n : 1) * sizeof *ev);
  c->rel.p = malloc((n ? n : 1) * sizeof *c->rel.p);
  c->acq.p = malloc((n ? n : 1) * sizeof *c->acq.p);
  if (!ev || !c->rel.p || !c->acq.p) {
    free(ev);
    return -1;
  }
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned k = kind_of(rec[i].who);
    if (global_of(rec[i].who) && (k == KC_ACC_FENCE || is_sync(k))) ev[m++] = &rec[i];
  }
  qsort(ev, m, sizeof *ev, by_thread);
  c->rel.n = c->acq.n = 0;
  int have_fence = 0;
  unsigned fseq = 0, fepoch = 0;
  for (size_t i = 0; i < m; i++) {
    const struct kc_access *e = ev[i];
    if (i && (e->block != ev[i - 1]->block || tid_of(e->who) != tid_of(ev[i - 1]->who)))
      have_fence = 0; /* a new thread */
    unsigned k = kind_of(e->who), tid = tid_of(e->who);
    uint64_t word = e->addr / 4;
    if (k == KC_ACC_FENCE) {
      have_fence = 1, fseq = e->seq, fepoch = e->epoch;
      continue;
    }
    if (have_fence && (k == KC_ACC_ATOMIC || k == KC_ACC_SWRITE))
      c->rel.p[c->rel.n++] = (struct point){word, e->block, tid, fseq, fepoch};
    if (k == KC_ACC_ATOMIC || k == KC_ACC_SREAD)
      c->acq.p[c->acq.n++] = (struct point){word, e->block, tid, e->seq, e->epoch};
  }
  free(ev);
  qsort(c->rel.p, c->rel.n, sizeof *c->rel.p, by_point);
  qsort(c->acq.p, c->acq.n, sizeof *c->acq.p, by_point);
  *releases = c->rel.n;
  return 0;
}

int kc_access_analyze(const struct kc_access *rec, size_t n, int cross_block,
                      struct kc_access_result *out) {
  memset(out, 0, sizeof *out);
  struct ctx c = {{0}, {0}};
  /* one touch per word an access covers (most cover one) */
  size_t words = 1;
  for (size_t i = 0; i < n; i++) {
    uint64_t a = rec[i].addr, sz = size_of(rec[i].who) ? size_of(rec[i].who) : 1;
    uint64_t w = (a + sz - 1) / 4 - a / 4 + 1;
    words += kind_of(rec[i].who) == KC_ACC_FENCE ? 0 : w < 4 ? w : 4;
  }
  struct touch *t = malloc(words * sizeof *t);
  if (!t || collect(rec, n, &c, &out->release_points)) {
    free(t);
    free(c.rel.p);
    free(c.acq.p);
    return -1;
  }
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned size = size_of(rec[i].who), k = kind_of(rec[i].who);
    if (k == KC_ACC_FENCE) continue;
    uint64_t first = rec[i].addr / 4, last = (rec[i].addr + (size ? size : 1) - 1) / 4;
    unsigned kb = global_of(rec[i].who) ? 0 : rec[i].block;
    for (uint64_t w = first; w <= last && w < first + 4; w++)
      t[m++] = (struct touch){w,           rec[i].block, rec[i].epoch, rec[i].who,
                              rec[i].site, rec[i].seq,   kb,           rec[i].addr};
  }
  qsort(t, m, sizeof *t, by_key);
  uint64_t budget = PAIR_BUDGET;
  for (size_t g = 0; g < m;) {
    size_t e = g + 1;
    while (e < m && !by_key(&t[g], &t[e]))
      e++;
    /* only groups with a plain write, or a plain access beside an atomic
     * or strong one, can hold a race */
    int plain_write = 0, plain = 0, sync = 0, write = 0, atomic = 0, other = 0;
    for (size_t i = g; i < e; i++) {
      unsigned k = kind_of(t[i].who);
      plain_write |= k == KC_ACC_WRITE;
      plain |= k == KC_ACC_READ || k == KC_ACC_WRITE;
      sync |= is_sync(k);
      write |= k == KC_ACC_WRITE || k == KC_ACC_SWRITE;
      atomic |= k == KC_ACC_ATOMIC;
      other |= k != KC_ACC_ATOMIC;
    }
    /* shared: strong accesses count as plain */
    int candidate =
        global_of(t[g].who) ? plain_write || (plain && sync) : write || (atomic && other);
    int found = 0;
    if (candidate) {
      /* one side of a racing pair is a write or an atomic/strong access */
      for (size_t i = g; i < e && !found; i++) {
        unsigned ki = kind_of(t[i].who);
        if (ki == KC_ACC_READ) continue;
        for (size_t j = g; j < e && !found; j++) {
          if (j == i) continue;
          if (!budget) {
            out->truncated = 1;
            goto done;
          }
          budget--;
          if (conflict(&c, cross_block, &t[i], &t[j])) {
            found = 1;
            if (!out->racing_words) {
              out->pair[0] = as_access(&t[i] < &t[j] ? &t[i] : &t[j]);
              out->pair[1] = as_access(&t[i] < &t[j] ? &t[j] : &t[i]);
            }
          }
        }
      }
    }
    out->racing_words += (size_t)found;
    g = e;
  }
done:
  free(t);
  free(c.rel.p);
  free(c.acq.p);
  return out->racing_words > 0;
}
