/* libkcheck/core/streams.c — cross-stream ordering races (see streams.h): vector
 * clocks per stream, per event and for the host, and the last accesses of
 * each address. One mutex: this is opt-in (stream_races=1) and the work per
 * operation is a few array passes. */
#include "streams.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <uthash.h>

#include "core.h"
#include "driver.h"
#include "guard.h"
#include "kernel.h"
#include "log.h"
#include "options.h"
#include "report.h"
#include "stack.h"

#define MAXS 64  /* streams tracked; operations on more are not */
#define NREADS 4 /* readers remembered per address */
#define MAXADDR 65536

struct clock {
  uint32_t v[MAXS];
};

struct rec {
  int valid, s;
  uint32_t epoch;
  uint64_t size, seq;
  char what[96];
  json_t *stack; /* counted reference */
};

struct hist {
  uint64_t addr;
  struct rec w, r[NREADS];
  UT_hash_handle hh;
};

struct evclock {
  CUevent ev;
  struct clock c;
  UT_hash_handle hh;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t keys[MAXS];
static int blocking[MAXS], nstreams = 1; /* 0: the legacy default stream */
static struct clock vc[MAXS], host;
static struct evclock *events;
static struct hist *hists;
static long nhists;
static uint64_t op_seq;

static void join(struct clock *a, const struct clock *b) {
  for (int i = 0; i < nstreams; i++)
    if (b->v[i] > a->v[i]) a->v[i] = b->v[i];
}

static uint64_t key_of(CUstream s, int ptsz) {
  if (s == CU_STREAM_PER_THREAD || (ptsz && !s)) return (uint64_t)pthread_self() | 1;
  if (!s || s == CU_STREAM_LEGACY) return 0;
  return (uint64_t)(uintptr_t)s;
}

/* The stream's index (locked), or -1 when too many streams. */
static int stream_index(CUstream s, int ptsz) {
  uint64_t k = key_of(s, ptsz);
  if (!k) return 0;
  for (int i = 1; i < nstreams; i++)
    if (keys[i] == k) return i;
  if (nstreams == MAXS) return -1;
  unsigned flags = 0;
  int per_thread = k & 1;
  /* The per-thread default stream is blocking; a created one says. */
  if (!per_thread && kc_drv.cuStreamGetFlags) {
    kc_guard_enter();
    if (kc_drv.cuStreamGetFlags(s, &flags) != CUDA_SUCCESS) flags = 0;
    kc_guard_leave();
  }
  keys[nstreams] = k;
  blocking[nstreams] = !(flags & CU_STREAM_NON_BLOCKING);
  memset(&vc[nstreams], 0, sizeof vc[nstreams]);
  return nstreams++;
}

/* What an operation on stream i waits for before it runs: the host's
 * program order, and the legacy stream's implicit joins. */
static void arrive(int i) {
  join(&vc[i], &host);
  if (i == 0) {
    for (int b = 1; b < nstreams; b++)
      if (blocking[b]) join(&vc[0], &vc[b]);
  } else if (blocking[i]) {
    join(&vc[i], &vc[0]);
  }
}

static void rec_clear(struct rec *r) {
  kc_stack_unref(r->stack);
  memset(r, 0, sizeof *r);
}

static void clear_all(void) {
  struct hist *h, *tmp;
  HASH_ITER(hh, hists, h, tmp) {
    HASH_DEL(hists, h);
    rec_clear(&h->w);
    for (int j = 0; j < NREADS; j++)
      rec_clear(&h->r[j]);
    free(h);
  }
  nhists = 0;
}

/* A race found under the lock, reported after it. */
struct race {
  struct rec first, second;
  int first_write, second_write;
  uint64_t addr;
};
#define MAXRACES 8

static int unordered(const struct rec *r, int s) {
  return r->valid && r->s != s && vc[s].v[r->s] < r->epoch;
}

static void note(struct race *out, int *n, const struct rec *first, int fw, const struct rec *now,
                 int nw, uint64_t addr) {
  if (*n == MAXRACES) return;
  struct race *x = &out[(*n)++];
  x->first = *first;
  x->second = *now;
  kc_stack_ref(x->first.stack);
  kc_stack_ref(x->second.stack);
  x->first_write = fw, x->second_write = nw, x->addr = addr;
}

static void access_one(const struct kc_access *a, const struct rec *now, struct race *out, int *n) {
  struct hist *h = NULL;
  HASH_FIND(hh, hists, &a->addr, sizeof a->addr, h);
  if (!h) {
    if (nhists >= MAXADDR) clear_all(); /* forgetting only loses reports */
    h = calloc(1, sizeof *h);
    if (!h) return;
    h->addr = a->addr;
    HASH_ADD(hh, hists, addr, sizeof h->addr, h);
    nhists++;
  }
  int s = now->s;
  if (unordered(&h->w, s)) note(out, n, &h->w, 1, now, a->write, a->addr);
  if (a->write)
    for (int j = 0; j < NREADS; j++)
      if (unordered(&h->r[j], s)) note(out, n, &h->r[j], 0, now, 1, a->addr);
  struct rec *slot;
  if (a->write) {
    for (int j = 0; j < NREADS; j++)
      rec_clear(&h->r[j]);
    slot = &h->w;
  } else {
    int j = 0, oldest = 0;
    for (; j < NREADS && h->r[j].valid && h->r[j].s != s; j++)
      if (h->r[j].seq < h->r[oldest].seq) oldest = j;
    slot = &h->r[j < NREADS ? j : oldest];
  }
  rec_clear(slot);
  *slot = *now;
  slot->size = a->size;
  kc_stack_ref(slot->stack);
}

#define FNV_BASIS 1469598103934665603ull
#define FNV_PRIME 1099511628211ull
static uint64_t fnv1a(uint64_t h, const char *s) {
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * FNV_PRIME;
  return h;
}

static json_t *side_json(const struct rec *r, int write) {
  json_t *j = json_pack("{s:s, s:i, s:I, s:s, s:I}", "op", r->what, "stream", r->s, "launch",
                        (json_int_t)r->seq, "access", write ? "write" : "read or write", "size",
                        (json_int_t)r->size);
  if (j && r->stack) json_object_set_new(j, "stack", kc_stack_copy_without_own(r->stack));
  return j;
}

static void report(struct race *x, const struct kc_launch_info *li) {
  char msg[512];
  int array = (x->addr & KC_ACCESS_ARRAY) != 0;
  unsigned long long where = (unsigned long long)(x->addr & ~KC_ACCESS_ARRAY);
  snprintf(msg, sizeof msg,
           "%s on stream %d and %s on stream %d touch %s 0x%llx (%s / %s) with no ordering "
           "between them (no event wait, stream or device synchronisation)",
           x->first.what, x->first.s, x->second.what, x->second.s, array ? "CUDA array" : "address",
           where, x->first_write ? "write" : "read", x->second_write ? "write" : "read");
  /* De-duplicated by (gate, both sides' names). */
  uint64_t h = fnv1a(fnv1a(FNV_BASIS, x->first.what), x->second.what);
  json_t *rec = json_pack(
      "{s:s, s:s, s:i, s:s, s:I, s:o, s:[iii], s:[iii], s:i, s:I, s:s, s:s}", "gate",
      "stream_order", "severity", "error", "kernel", li ? li->k->id : -1, "kernel_name",
      x->second.what, "launch", (json_int_t)x->second.seq, "signature", kc_json_hash(h), "grid",
      li ? li->grid[0] : 0, li ? li->grid[1] : 0, li ? li->grid[2] : 0, "block",
      li ? li->block[0] : 0, li ? li->block[1] : 0, li ? li->block[2] : 0, "shmem",
      li ? li->shmem : 0, "seed", (json_int_t)kc_opt.seed, "message", msg, "gate_contract",
      "two operations on different streams that touch the same memory, one of them writing, are "
      "ordered by an event wait or a synchronisation");
  if (rec) {
    char addr[24];
    snprintf(addr, sizeof addr, "0x%llx", where);
    json_object_set_new(rec, "evidence",
                        json_pack("{s:o, s:o, s:s, s:s}", "first",
                                  side_json(&x->first, x->first_write), "second",
                                  side_json(&x->second, x->second_write), "address", addr, "memory",
                                  array ? "cuda_array" : "linear"));
    /* a copy: reporting names the record's host frames in place, and the
     * tracked stack may be shared (kc_stack_json_reused) */
    if (x->second.stack)
      json_object_set_new(rec, "stack", kc_stack_copy_without_own(x->second.stack));
  }
  rec_clear(&x->first);
  rec_clear(&x->second);
  if (rec) kc_report_violation(rec);
}

/* Pairs of operations (hash of both names) whose race was handed to a
 * launch's check already: a race that recurs every step is re-run once. */
#define MAXDELAYED 256
static uint64_t delayed[MAXDELAYED];
static int ndelayed;

static uint64_t pair_hash(const struct race *x) {
  uint64_t h = (fnv1a(FNV_BASIS, x->first.what) ^ 0xff) * FNV_PRIME;
  return fnv1a(h, x->second.what);
}

/* Locked: the launch's new races with an earlier write, into li->delay. */
static void note_delays(const struct race *races, int n, struct kc_launch_info *li) {
  for (int r = 0; r < n && li->delay.n < KC_MAX_DELAY; r++) {
    const struct race *x = &races[r];
    if (!x->first_write) continue;
    uint64_t h = pair_hash(x);
    int seen = 0;
    for (int j = 0; j < ndelayed && !seen; j++)
      seen = delayed[j] == h;
    if (seen || ndelayed == MAXDELAYED) continue;
    delayed[ndelayed++] = h;
    li->delay.addr[li->delay.n] = x->addr;
    li->delay.size[li->delay.n++] = x->first.size;
    snprintf(li->delay.what, sizeof li->delay.what, "%s", x->first.what);
    li->delay.stream = x->first.s;
    if (x->first.stack && !li->delay.stack) li->delay.stack = kc_stack_ref(x->first.stack);
  }
}

static void op(int i, const char *what, const struct kc_access *acc, int nacc,
               struct kc_launch_info *li, int sync) {
  kc_guard_enter();
  /* every tracked operation keeps a stack for the race it may be part of:
   * reused from an earlier one with the same name, stream and Python frames */
  json_t *stack = nacc ? kc_stack_json_reused(3, fnv1a(FNV_BASIS, what) ^ (uint64_t)i) : NULL;
  kc_guard_leave();
  struct race races[MAXRACES];
  int n = 0;
  pthread_mutex_lock(&lock);
  arrive(i);
  struct rec now = {1, i, ++vc[i].v[i], 0, op_seq++, "", stack};
  snprintf(now.what, sizeof now.what, "%s", what);
  for (int a = 0; a < nacc; a++)
    access_one(&acc[a], &now, races, &n);
  if (sync) join(&host, &vc[i]);
  if (li && n) note_delays(races, n, li);
  pthread_mutex_unlock(&lock);
  kc_stack_unref(stack);
  for (int r = 0; r < n; r++) {
    kc_guard_enter();
    report(&races[r], li);
    kc_guard_leave();
  }
}

void kc_streams_launch(struct kc_launch_info *li) {
  struct kc_access acc[64];
  int n = 0;
  uint64_t written = atomic_load(&li->k->written_words);
  for (int p = 0; p < li->nptrs && n < 64; p++) {
    uint32_t w = li->ptrs[p].offset / 8;
    acc[n++] = (struct kc_access){li->ptrs[p].value, 1, w < 64 && ((written >> w) & 1)};
  }
  pthread_mutex_lock(&lock);
  int i = stream_index(li->stream, li->args->ptsz);
  pthread_mutex_unlock(&lock);
  if (i < 0) return;
  op(i, li->k->demangled, acc, n, li, 0);
}

void kc_streams_op(CUstream s, int ptsz, int sync, const char *what, const struct kc_access *acc,
                   int nacc) {
  pthread_mutex_lock(&lock);
  int i = stream_index(s, ptsz);
  pthread_mutex_unlock(&lock);
  if (i >= 0) op(i, what, acc, nacc, NULL, sync);
}

static struct evclock *event_of(CUevent ev, int make) {
  struct evclock *e = NULL;
  HASH_FIND_PTR(events, &ev, e);
  if (!e && make && (e = calloc(1, sizeof *e))) {
    e->ev = ev;
    HASH_ADD_PTR(events, ev, e);
  }
  return e;
}

void kc_streams_event_record(CUevent ev, CUstream s, int ptsz) {
  pthread_mutex_lock(&lock);
  int i = stream_index(s, ptsz);
  struct evclock *e = i >= 0 ? event_of(ev, 1) : NULL;
  if (e) {
    arrive(i);
    e->c = vc[i];
  }
  pthread_mutex_unlock(&lock);
}

void kc_streams_wait_event(CUstream s, int ptsz, CUevent ev) {
  pthread_mutex_lock(&lock);
  int i = stream_index(s, ptsz);
  struct evclock *e = event_of(ev, 0);
  if (i >= 0 && e) join(&vc[i], &e->c);
  pthread_mutex_unlock(&lock);
}

void kc_streams_stream_synced(CUstream s, int ptsz) {
  pthread_mutex_lock(&lock);
  int i = stream_index(s, ptsz);
  if (i >= 0) {
    arrive(i); /* a legacy-stream sync waits for the blocking streams too */
    join(&host, &vc[i]);
  }
  pthread_mutex_unlock(&lock);
}

void kc_streams_event_synced(CUevent ev) {
  pthread_mutex_lock(&lock);
  struct evclock *e = event_of(ev, 0);
  if (e) join(&host, &e->c);
  pthread_mutex_unlock(&lock);
}

void kc_streams_ctx_synced(void) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < nstreams; i++)
    join(&host, &vc[i]);
  pthread_mutex_unlock(&lock);
}

void kc_streams_learn_writes(const struct kc_kernel *k, const uint32_t *offsets, int n) {
  uint64_t m = 0;
  for (int i = 0; i < n; i++)
    if (offsets[i] % 8 == 0 && offsets[i] / 8 < 64) m |= 1ull << (offsets[i] / 8);
  atomic_fetch_or(&((struct kc_kernel *)k)->written_words, m);
}
