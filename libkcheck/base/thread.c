/* libkcheck/base/thread.c — see thread.h. */
#include "thread.h"

#include <assert.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

/* Created and not yet in their own code. */
static atomic_int starting;

struct start {
  void *(*fn)(void *);
  void *arg;
};

static void *trampoline(void *p) {
  struct start s = *(struct start *)p;
  free(p);
  /* Start-up is over: what runs now is kcheck's own, and holds no lock
   * across a fork (each of kcheck's locks is taken by the fork handlers or
   * reset in the child). */
  int was = atomic_fetch_sub(&starting, 1);
  assert(was > 0);
  (void)was;
  return s.fn(s.arg);
}

int kc_thread_start(pthread_t *t, int detached, void *(*fn)(void *), void *arg) {
  struct start *s = malloc(sizeof *s);
  if (!s) return -1;
  s->fn = fn;
  s->arg = arg;
  pthread_attr_t a;
  pthread_attr_init(&a);
  if (detached) pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  /* The new thread inherits the creator's mask: block everything around
   * the creation so that no signal is ever delivered to it. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  atomic_fetch_add(&starting, 1);
  int rc = pthread_create(t, &a, trampoline, s);
  if (rc) {
    atomic_fetch_sub(&starting, 1);
    free(s);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&a);
  return rc;
}

int kc_thread_wait_started(int timeout_ms) {
  for (int waited = 0; atomic_load(&starting) > 0; waited++) {
    if (waited >= timeout_ms * 10) return -1;
    struct timespec t = {0, 100000}; /* 0.1 ms */
    nanosleep(&t, NULL);
  }
  return 0;
}

void kc_thread_postfork_child(void) { atomic_store(&starting, 0); }
