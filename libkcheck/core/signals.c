/* libkcheck/core/signals.c — SIGTERM and SIGINT still write the summary record
 * and the stderr summary (a job killed by a CI timeout or ^C reports what it
 * found), then die of the same signal. Only installed where the signal has
 * its default action: an application's own handler (Python's SIGINT →
 * KeyboardInterrupt) is left alone; its normal exit runs the atexit path.
 *
 * Writing the summary allocates (jansson) and takes locks, none of which is
 * async-signal-safe: the interrupted thread may hold malloc's lock. So the
 * handler only hands the signal to a watcher thread through a pipe (write
 * and poll are async-signal-safe), waits for it a bounded time, then dies.
 * The watcher runs with every signal blocked, so the handler never runs on
 * it. If the watcher could not be started, the handler writes the summary
 * itself, as the best it can do.
 *
 * _exit and _Exit (shim/exit_hook.c) go the same way, for the same reason:
 * they skip atexit, and they are often called from a signal handler of the
 * application's own. The watcher is started whether or not a handler was
 * installed. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "report.h"
#include "thread.h"

/* How long the dying thread waits for the summary: the watcher may be held
 * by a lock the interrupted thread owns, and the process must still die. */
#define KC_SIGNAL_WAIT_MS 10000

static int req[2] = {-1, -1}, done[2] = {-1, -1};
static atomic_int watcher_ready, installed;

static void *watcher_main(void *arg) {
  (void)arg;
  for (;;) {
    int sig;
    ssize_t n = read(req[0], &sig, sizeof sig);
    if (n < 0 && errno == EINTR) continue;
    if (n != (ssize_t)sizeof sig) return NULL;
    if (sig)
      kc_report_finish_signal(sig); /* once; later calls return at once */
    else
      kc_core_exit_flush();
    if (write(done[1], "x", 1) < 0) return NULL;
  }
}

static void close_pipes(void) {
  for (int i = 0; i < 2; i++) {
    if (req[i] >= 0) close(req[i]);
    if (done[i] >= 0) close(done[i]);
    req[i] = done[i] = -1;
  }
}

static void start_watcher(void) {
  atomic_store(&watcher_ready, 0);
  close_pipes();
  if (pipe2(req, O_CLOEXEC) || pipe2(done, O_CLOEXEC)) {
    close_pipes();
    return;
  }
  /* Every signal blocked in the watcher: no signal is ever delivered to it. */
  pthread_t t;
  if (kc_thread_start(&t, 1, watcher_main, NULL)) {
    close_pipes();
    return;
  }
  atomic_store(&watcher_ready, 1);
}

static void on_signal(int sig) {
  int handed = 0;
  if (atomic_load(&watcher_ready) && write(req[1], &sig, sizeof sig) == (ssize_t)sizeof sig) {
    handed = 1;
    struct pollfd p = {.fd = done[0], .events = POLLIN};
    while (poll(&p, 1, KC_SIGNAL_WAIT_MS) < 0 && errno == EINTR) {
    }
  }
  if (!handed) kc_report_finish_signal(sig);
  signal(sig, SIG_DFL);
  raise(sig);
}

void kc_signals_exit_flush(void) {
  if (atomic_load(&watcher_ready) &&
      write(req[1], &(int){0}, sizeof(int)) == (ssize_t)sizeof(int)) {
    struct pollfd p = {.fd = done[0], .events = POLLIN};
    while (poll(&p, 1, KC_SIGNAL_WAIT_MS) < 0 && errno == EINTR) {
    }
    return;
  }
  kc_core_exit_flush();
}

void kc_signals_install(void) {
  static const int sigs[] = {SIGTERM, SIGINT};
  if (!atomic_exchange(&installed, 1)) start_watcher();
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    struct sigaction old;
    if (sigaction(sigs[i], NULL, &old) || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO))
      continue;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(sigs[i], &sa, NULL);
  }
}

void kc_signals_postfork_child(void) {
  /* The watcher did not survive the fork; the handlers did. */
  if (atomic_load(&installed)) start_watcher();
}
