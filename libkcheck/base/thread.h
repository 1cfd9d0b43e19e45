/* libkcheck/base/thread.h — kcheck's own threads (the report writer, the
 * findings worker, the signal watcher), created so that a fork never copies
 * one of them half-started.
 *
 * Why: a thread's start-up runs code of the C library and of any preloaded
 * runtime (AddressSanitizer's allocator frees and allocates while it reads
 * the new thread's stack bounds) under locks that are not reset in a fork's
 * child. kcheck starts its threads at activation, which is often just before
 * a program forks (a worker pool right after the first CUDA call): a child
 * forked in that window inherited the lock held, and the child's own first
 * thread waited on it forever. The prefork handler therefore waits, bounded,
 * until every thread kcheck started has reached its own code. */
#ifndef KC_THREAD_H
#define KC_THREAD_H

#include <pthread.h>

/* pthread_create with every signal blocked in the new thread (kcheck's
 * threads are never the application's to signals), detached when detached
 * is set. Returns pthread_create's result. */
int kc_thread_start(pthread_t *t, int detached, void *(*fn)(void *), void *arg);
/* Waits until every thread kc_thread_start created has begun running fn,
 * at most timeout_ms. Returns 0 when none is starting any more. */
int kc_thread_wait_started(int timeout_ms);

/* In a fork's child: the threads that were starting are not there. */
void kc_thread_postfork_child(void);

#endif
