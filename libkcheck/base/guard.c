/* libkcheck/base/guard.c — the thread-local re-entrancy guard's storage
 * (guard.h): every room marks kcheck's own driver calls with it. */
#include "guard.h"

__thread int kc_guard_depth __attribute__((tls_model("initial-exec")));
