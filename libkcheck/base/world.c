/* libkcheck/base/world.c — the process-wide check lock (see world.h). Readers
 * are the application's threads inside a fenced driver entry; the writer is
 * the one thread checking a launch. Each reader thread owns a slot; a
 * reader announces itself in its slot, then reads `wanted`; the writer
 * sets `wanted`, then reads every slot. Both sides use sequentially
 * consistent operations, so at least one sees the other (Dekker): either
 * the reader backs off or the writer waits for it. Slots live in a static
 * array (no allocation on the launch path); threads beyond it share one
 * counted overflow slot. */
#include "world.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "log.h"

#define NSLOTS 1024

struct slot {
  atomic_long busy; /* fenced calls in progress on the thread(s) of this slot */
  atomic_int used;  /* owned by a live thread */
  char pad[64 - sizeof(atomic_long) - sizeof(atomic_int)];
};

static _Alignas(64) struct slot slots[NSLOTS + 1]; /* [NSLOTS]: the shared overflow slot */
static _Alignas(64) atomic_int wanted;             /* a check holds or waits for the world */
static pthread_mutex_t wait_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wait_c = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t check_m = PTHREAD_MUTEX_INITIALIZER; /* one check at a time */
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

#define KC_TLS __thread __attribute__((tls_model("initial-exec")))
static KC_TLS struct slot *me;
static KC_TLS int depth;     /* nesting of this thread's holds, shared or exclusive */
static KC_TLS int exclusive; /* this thread holds the world exclusively */

/* A destructor that runs after this one may still make a fenced call: from
 * then on this thread counts itself in the shared overflow slot, so the
 * slot it gives back is never written by two threads. */
static void thread_exit(void *s) {
  me = &slots[NSLOTS];
  atomic_store(&((struct slot *)s)->used, 0);
}

static void make_key(void) {
  if (pthread_key_create(&exit_key, thread_exit)) KC_INTERNAL_ERROR("pthread_key_create failed");
}

static struct slot *attach(void) {
  (void)pthread_once(&key_once, make_key);
  for (int i = 0; i < NSLOTS; i++) {
    int zero = 0;
    if (atomic_load_explicit(&slots[i].used, memory_order_relaxed) == 0 &&
        atomic_compare_exchange_strong(&slots[i].used, &zero, 1)) {
      /* The slot goes back to the pool when the thread exits. */
      if (pthread_setspecific(exit_key, &slots[i])) break;
      return me = &slots[i];
    }
  }
  return me = &slots[NSLOTS];
}

static void wait_for_check(void) {
  pthread_mutex_lock(&wait_m);
  while (atomic_load(&wanted))
    pthread_cond_wait(&wait_c, &wait_m);
  pthread_mutex_unlock(&wait_m);
}

void kc_world_enter(void) {
  if (depth++) return;
  struct slot *s = me;
  if (KC_NEVER(!s)) s = attach();
  int own = s != &slots[NSLOTS];
  for (;;) {
    /* Only this thread writes its own slot: a store (xchg) is enough; the
     * overflow slot is shared and counted. */
    if (own)
      atomic_store_explicit(&s->busy, 1, memory_order_seq_cst);
    else
      atomic_fetch_add_explicit(&s->busy, 1, memory_order_seq_cst);
    if (!atomic_load_explicit(&wanted, memory_order_seq_cst)) return;
    if (own)
      atomic_store_explicit(&s->busy, 0, memory_order_seq_cst);
    else
      atomic_fetch_sub_explicit(&s->busy, 1, memory_order_seq_cst);
    wait_for_check();
  }
}

void kc_world_leave(void) {
  if (--depth) return;
  if (me != &slots[NSLOTS])
    atomic_store_explicit(&me->busy, 0, memory_order_release);
  else
    atomic_fetch_sub_explicit(&me->busy, 1, memory_order_release);
}

static void deadline_after(struct timespec *t, unsigned ms) {
  clock_gettime(CLOCK_REALTIME, t);
  t->tv_sec += ms / 1000;
  t->tv_nsec += (long)(ms % 1000) * 1000000L;
  if (t->tv_nsec >= 1000000000L) t->tv_sec++, t->tv_nsec -= 1000000000L;
}

static int past(const struct timespec *t) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return now.tv_sec > t->tv_sec || (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

static void release_waiters(void) {
  pthread_mutex_lock(&wait_m);
  atomic_store(&wanted, 0);
  pthread_cond_broadcast(&wait_c);
  pthread_mutex_unlock(&wait_m);
}

int kc_world_lock(unsigned timeout_ms, const char **why) {
  if (depth) {
    /* Upgrading a shared hold would wait for this very thread. */
    *why = "the launching thread is inside a fenced driver call";
    return -1;
  }
  struct timespec dl;
  deadline_after(&dl, timeout_ms);
  int rc = timeout_ms ? pthread_mutex_timedlock(&check_m, &dl) : pthread_mutex_lock(&check_m);
  if (rc) {
    *why = rc == ETIMEDOUT ? "another thread's check did not finish within check_lock_ms"
                           : "the check lock failed";
    return -1;
  }
  atomic_store(&wanted, 1);
  for (int i = 0; i <= NSLOTS; i++) {
    for (unsigned spins = 0; atomic_load(&slots[i].busy); spins++) {
      if (timeout_ms && (spins & 63) == 63 && past(&dl)) {
        /* A thread stays inside a driver call (e.g. a synchronous copy that
         * waits for work another waiting thread would enqueue): give up
         * rather than deadlock. */
        release_waiters();
        pthread_mutex_unlock(&check_m);
        *why = "other threads' GPU work did not pause within check_lock_ms";
        return -1;
      }
      if (spins < 64)
        sched_yield();
      else
        nanosleep(&(struct timespec){0, 20000}, NULL);
    }
  }
  depth = 1;
  exclusive = 1;
  return 0;
}

void kc_world_unlock(void) {
  if (KC_NEVER(!exclusive)) return;
  exclusive = 0;
  depth = 0;
  release_waiters();
  pthread_mutex_unlock(&check_m);
}

int kc_world_exclusive_here(void) { return exclusive; }

void kc_world_postfork_child(void) {
  /* fork is not a fenced entry and kcheck never forks inside a check, so
   * the forking thread holds nothing; the other threads are gone. */
  pthread_mutex_init(&wait_m, NULL);
  pthread_cond_init(&wait_c, NULL);
  pthread_mutex_init(&check_m, NULL);
  atomic_store(&wanted, 0);
  for (int i = 0; i <= NSLOTS; i++) {
    atomic_store(&slots[i].busy, 0);
    if (&slots[i] != me) atomic_store(&slots[i].used, 0);
  }
  depth = 0;
  exclusive = 0;
}
