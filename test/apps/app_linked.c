/* test/apps/app_linked.c — a test application linked with -lcuda that calls
 * the exported driver symbols directly (cuLaunchKernel, cuLaunchKernelEx,
 * cuLaunchCooperativeKernel, cuMemAlloc_v2 ... through the cuda.h names).
 * usage: app_linked [basic|races|all] [--fork]
 *   --fork  forks before touching the driver; parent and child both run. */
#include <sys/wait.h>
#include <unistd.h>

#include "apps_linked.h"

static const char *app_name = "app_linked";

int main(int argc, char **argv) {
  const char *mode = "basic";
  int do_fork = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--fork") == 0)
      do_fork = 1;
    else
      mode = argv[i];
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (!do_fork) return app_run(mode);

  pid_t pid = fork();
  if (pid < 0) {
    perror("app_linked: fork");
    return 1;
  }
  if (pid == 0) {
    app_name = "app_linked[child]";
    exit(app_run(mode)); /* exit, not _exit: the driver writes its call log at exit */
  }
  app_name = "app_linked[parent]";
  int rc = app_run(mode), st = 0;
  if (waitpid(pid, &st, 0) != pid) {
    perror("app_linked: waitpid");
    return 1;
  }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "app_linked: child failed (status 0x%x)\n", st);
    return 1;
  }
  return rc;
}
