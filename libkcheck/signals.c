/* libkcheck/signals.c — SIGTERM and SIGINT still write the summary record
 * and the stderr summary (a job killed by a CI timeout or ^C reports what it
 * found), then die of the same signal. Only installed where the signal has
 * its default action: an application's own handler (Python's SIGINT →
 * KeyboardInterrupt) is left alone; its normal exit runs the atexit path. */
#include <signal.h>
#include <string.h>

#include "core.h"
#include "report.h"

static void on_signal(int sig) {
  kc_report_finish_signal(sig);
  signal(sig, SIG_DFL);
  raise(sig);
}

void kc_signals_install(void) {
  static const int sigs[] = {SIGTERM, SIGINT};
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
