/* test/unit/test_asserts.c — internal invariants are on in the test build:
 * a broken KC_ASSERT aborts (naming it), a kept one does nothing. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "log.h"

int main(void) {
#ifndef KC_CHECKED
  CHECK(!"the test build defines KC_CHECKED");
#endif
  int one = 1;
  KC_ASSERT(one == 1);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    KC_ASSERT(one == 2);
    _exit(0); /* not reached when asserts are on */
  }
  int st = 0;
  CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
  CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
  return CHECK_DONE("asserts");
}
