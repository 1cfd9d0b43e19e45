/* bench/world_lock.c — what the world lock (libkcheck/base/world.c) costs the
 * application's threads: ns per shared enter/leave pair, one to eight
 * threads at once with no check running (the pass-through case), next to a
 * pthread rwlock read lock/unlock pair (the obvious alternative, whose
 * shared counter every reader writes). Also the same with a thread taking
 * the world exclusively every millisecond for 50 us (a busy checker).
 * Output: RESULT <variant> threads=<T> ns_per_pair=<ns> (best of 3). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "world.h"

enum { N = 2000000 };
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static atomic_int go, stop_writer;
static int use_rw;

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return 1e9 * (double)t.tv_sec + (double)t.tv_nsec;
}

static void *reader(void *arg) {
  double *ns = arg;
  while (!atomic_load(&go))
    ;
  double t0 = now_ns();
  for (int i = 0; i < N; i++) {
    if (use_rw) {
      pthread_rwlock_rdlock(&rw);
      pthread_rwlock_unlock(&rw);
    } else {
      kc_world_enter();
      kc_world_leave();
    }
  }
  *ns = (now_ns() - t0) / N;
  return NULL;
}

static void *writer(void *arg) {
  (void)arg;
  while (!atomic_load(&stop_writer)) {
    const char *why;
    if (kc_world_lock(2000, &why) == 0) {
      nanosleep(&(struct timespec){0, 50000}, NULL);
      kc_world_unlock();
    }
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  return NULL;
}

static double run(int threads, int rwlock, int with_writer) {
  double best = 1e30;
  for (int rep = 0; rep < 3; rep++) {
    pthread_t t[8], w;
    double ns[8];
    use_rw = rwlock;
    atomic_store(&go, 0);
    atomic_store(&stop_writer, 0);
    for (int i = 0; i < threads; i++)
      pthread_create(&t[i], NULL, reader, &ns[i]);
    if (with_writer) pthread_create(&w, NULL, writer, NULL);
    atomic_store(&go, 1);
    double sum = 0;
    for (int i = 0; i < threads; i++) {
      pthread_join(t[i], NULL);
      sum += ns[i];
    }
    atomic_store(&stop_writer, 1);
    if (with_writer) pthread_join(w, NULL);
    if (sum / threads < best) best = sum / threads;
  }
  return best;
}

int main(void) {
  static const int ts[] = {1, 2, 4, 8};
  for (int i = 0; i < 4; i++) {
    printf("RESULT world threads=%d ns_per_pair=%.2f\n", ts[i], run(ts[i], 0, 0));
    printf("RESULT pthread_rwlock threads=%d ns_per_pair=%.2f\n", ts[i], run(ts[i], 1, 0));
  }
  printf("RESULT world_with_checker threads=4 ns_per_pair=%.2f\n", run(4, 0, 1));
  return 0;
}
