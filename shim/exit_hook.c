/* shim/exit_hook.c — _exit and _Exit end the process without atexit, so a
 * program that ends with them (os._exit, a server's fast shutdown, a
 * forked worker) would lose the findings still queued and the summary.
 * These write both first (bounded: libkcheck/core/signals.c), then end the
 * process as glibc's _exit does, with exit_group. A vfork child and
 * kcheck's own calls pass straight through (kc_core_exit_wanted). */
#include <sys/syscall.h>
#include <unistd.h>

#include "core.h"
#include "shim.h"

KC_EXPORT void _exit(int status) {
  if (kc_core_exit_wanted()) kc_signals_exit_flush();
  for (;;)
    syscall(SYS_exit_group, status);
}

KC_EXPORT void _Exit(int status) { _exit(status); }
