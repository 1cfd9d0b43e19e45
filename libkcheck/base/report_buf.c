/* libkcheck/base/report_buf.c — see report_buf.h. Stream position p (bytes
 * appended since open) is file offset p and ring index p % RING. Invariants:
 * tail <= head, head - tail <= RING; [tail, head) is unwritten, and no append
 * touches it. */
#include "report_buf.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "thread.h"

#define RING (4u << 20)
#define WRITER_PERIOD_NS 2000000 /* 2 ms */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;    /* the writer */
static pthread_cond_t written = PTHREAD_COND_INITIALIZER; /* space, flush */
static char *ring;
static int fd = -1;
static uint64_t head, tail;
/* For the crash handler, which takes no lock. */
static _Atomic uint64_t committed, on_disk;
static _Atomic int crash_fd = -1;
static pthread_t writer;
static int writer_running, stopping, write_failed;
static int writer_idle; /* waiting with nothing to write: no timer until an append */
/* A drain is writing with the lock released: one at a time, so that tail
 * never passes bytes another drain still reads from the ring. */
static int draining;

/* Writes stream bytes [from, to) from the ring. No lock needed: appends
 * never touch unwritten bytes. Async-signal-safe. */
static int write_range(int f, uint64_t from, uint64_t to) {
  while (from < to) {
    size_t at = (size_t)(from % RING);
    size_t n = (size_t)(to - from);
    if (n > RING - at) n = RING - at;
    ssize_t w = pwrite(f, ring + at, n, (off_t)from);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    from += (uint64_t)w;
  }
  return 0;
}

/* Writes [tail, head) with the lock released; called with the lock held.
 * On return every byte appended before the call is in the file. */
static void drain_locked(void) {
  while (draining)
    pthread_cond_wait(&written, &lock);
  uint64_t from = tail, to = head;
  if (from == to) return;
  draining = 1;
  pthread_mutex_unlock(&lock);
  int rc = write_range(fd, from, to);
  pthread_mutex_lock(&lock);
  draining = 0;
  if (rc && !write_failed) {
    write_failed = 1;
    KC_INTERNAL_ERROR("writing the report failed");
  }
  if (to > tail) tail = to;
  atomic_store_explicit(&on_disk, tail, memory_order_release);
  pthread_cond_broadcast(&written);
}

static void *writer_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&lock);
  while (!stopping) {
    if (tail == head) {
      /* Nothing to write: no periodic wake-ups (most runs append nothing
       * between the start and the end). */
      writer_idle = 1;
      pthread_cond_wait(&wake, &lock);
      writer_idle = 0;
      continue;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += WRITER_PERIOD_NS;
    if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
    pthread_cond_timedwait(&wake, &lock, &ts);
    drain_locked();
  }
  drain_locked();
  pthread_mutex_unlock(&lock);
  return NULL;
}

/* ---- crash handler: write what is committed, then let the previous
 * disposition act. */
static const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
#define NFATAL (sizeof fatal / sizeof fatal[0])
static struct sigaction previous[NFATAL];
static int handlers_installed;

static void on_fatal(int sig, siginfo_t *info, void *uctx) {
  (void)uctx;
  int f = atomic_load(&crash_fd);
  if (f >= 0)
    (void)write_range(f, atomic_load_explicit(&on_disk, memory_order_acquire),
                      atomic_load_explicit(&committed, memory_order_acquire));
  for (size_t i = 0; i < NFATAL; i++)
    if (fatal[i] == sig) sigaction(sig, &previous[i], NULL);
  /* A fault (si_code > 0) happens again when this handler returns, now
   * under the previous disposition, with its real siginfo. A sent signal
   * (abort, raise, kill) is sent again: pending until this returns. */
  if (!info || info->si_code <= 0) raise(sig);
}

static void install_handlers(void) {
  if (handlers_installed) return;
  handlers_installed = 1;
  for (size_t i = 0; i < NFATAL; i++) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_ONSTACK | SA_SIGINFO;
    struct sigaction old;
    if (sigaction(fatal[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) {
      previous[i] = old; /* ignored on purpose: leave it so */
      continue;
    }
    sigaction(fatal[i], &sa, &previous[i]);
  }
}

int kc_rbuf_open(int f) {
  pthread_mutex_lock(&lock);
  if (!ring && !(ring = malloc(RING))) {
    pthread_mutex_unlock(&lock);
    return -1;
  }
  fd = f;
  head = tail = 0;
  atomic_store(&committed, 0);
  atomic_store(&on_disk, 0);
  stopping = write_failed = 0;
  if (!writer_running) {
    /* Without the thread every append writes through (slower, still right). */
    writer_running = kc_thread_start(&writer, 0, writer_main, NULL) == 0;
  }
  pthread_mutex_unlock(&lock);
  atomic_store(&crash_fd, f);
  install_handlers();
  return 0;
}

static int appendv(const struct kc_rbuf_part *parts, int nparts, int through) {
  pthread_mutex_lock(&lock);
  if (fd < 0) {
    pthread_mutex_unlock(&lock);
    return -1;
  }
  for (int j = 0; j < nparts; j++) {
    const char *s = parts[j].p;
    size_t n = parts[j].n;
    while (n) {
      uint64_t space = RING - (head - tail);
      if (!space) {
        if (writer_running) {
          pthread_cond_signal(&wake);
          pthread_cond_wait(&written, &lock);
        } else {
          drain_locked();
        }
        continue;
      }
      size_t at = (size_t)(head % RING), k = n;
      if (k > space) k = (size_t)space;
      if (k > RING - at) k = RING - at;
      memcpy(ring + at, s, k);
      head += k;
      s += k, n -= k;
    }
  }
  /* Committed once, after the last part: a crash handler writes whole
   * records only (unless one is larger than the ring). */
  atomic_store_explicit(&committed, head, memory_order_release);
  if (!writer_running || through)
    drain_locked(); /* with the record's bytes and all before them */
  else if (writer_idle || head - tail > RING / 2)
    pthread_cond_signal(&wake);
  int rc = through && write_failed ? -1 : 0;
  pthread_mutex_unlock(&lock);
  return rc;
}

int kc_rbuf_appendv(const struct kc_rbuf_part *parts, int nparts) {
  return appendv(parts, nparts, 0);
}

int kc_rbuf_appendv_through(const struct kc_rbuf_part *parts, int nparts) {
  return appendv(parts, nparts, 1);
}

int kc_rbuf_append(const void *p, size_t n) {
  struct kc_rbuf_part part = {p, n};
  return kc_rbuf_appendv(&part, 1);
}

int kc_rbuf_flush(void) {
  pthread_mutex_lock(&lock);
  uint64_t want = head;
  if (fd >= 0 && writer_running) {
    while (tail < want && !stopping) {
      pthread_cond_signal(&wake);
      pthread_cond_wait(&written, &lock);
    }
  }
  if (fd >= 0 && tail < want) drain_locked();
  int rc = write_failed ? -1 : 0;
  pthread_mutex_unlock(&lock);
  return rc;
}

void kc_rbuf_close(void) {
  kc_rbuf_flush();
  pthread_mutex_lock(&lock);
  int join = writer_running;
  stopping = 1;
  pthread_cond_signal(&wake);
  pthread_mutex_unlock(&lock);
  if (join) pthread_join(writer, NULL);
  pthread_mutex_lock(&lock);
  writer_running = 0;
  atomic_store(&crash_fd, -1);
  if (fd >= 0) close(fd);
  fd = -1;
  pthread_mutex_unlock(&lock);
}

void kc_rbuf_lock(void) { pthread_mutex_lock(&lock); }
void kc_rbuf_unlock(void) { pthread_mutex_unlock(&lock); }

void kc_rbuf_forget_child(void) {
  pthread_mutex_init(&lock, NULL);
  pthread_cond_init(&wake, NULL);
  pthread_cond_init(&written, NULL);
  writer_running = writer_idle = draining = 0;
  atomic_store(&crash_fd, -1);
  if (fd >= 0) close(fd);
  fd = -1;
  head = tail = 0;
}
