/* libkcheck/base/torch_boot.c — activation of the PyTorch binding. The
 * library's constructor runs before the interpreter reads its environment,
 * so with torch=1 in KCHECK_OPTIONS it puts the binding's boot folder
 * (python/kcheck/_boot, holding a sitecustomize.py) first on PYTHONPATH.
 * Python then installs a lazy import hook at start-up; the binding itself
 * is installed only when the program imports torch. Children (pytest,
 * torchrun workers, spawn, python -c) inherit the variables. */
#include "torch_boot.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* torch=1 (or true/yes/on) among KCHECK_OPTIONS' ':'-separated pairs; the
 * options proper are parsed later, on the first CUDA call. */
static int torch_requested(const char *opts) {
  static const char *const on[] = {"torch=1", "torch=true", "torch=yes", "torch=on"};
  int found = 0;
  for (const char *p = opts; p && *p;) {
    const char *end = strchr(p, ':');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len > 6 && !strncmp(p, "torch=", 6)) {
      found = 0; /* the last setting wins, as in the parser */
      for (size_t i = 0; i < sizeof on / sizeof on[0]; i++)
        if (len == strlen(on[i]) && !strncmp(p, on[i], len)) found = 1;
    }
    p += len + (end != NULL);
  }
  return found;
}

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The boot folder: $KCHECK_PYTHON/kcheck/_boot, else next to the library
 * (a source checkout's build/ -> ../python, or a build folder one deeper
 * such as BUILD=out/gpu -> ../../python; an install's lib/kcheck ->
 * python; the Python package's own kcheck/lib -> ../_boot). 0, or -1 when
 * none exists. */
static int boot_dir(char *out, size_t n) {
  const char *py = getenv("KCHECK_PYTHON");
  if (py && *py) {
    snprintf(out, n, "%s/kcheck/_boot", py);
    return is_dir(out) ? 0 : -1;
  }
  Dl_info info;
  if (!dladdr((void *)kc_torch_boot_env, &info) || !info.dli_fname) return -1;
  char lib[PATH_MAX];
  if (!realpath(info.dli_fname, lib)) return -1;
  char *slash = strrchr(lib, '/');
  if (!slash) return -1;
  *slash = 0;
  static const char *const rel[] = {"/../python/kcheck/_boot", "/python/kcheck/_boot", "/../_boot",
                                    "/../../python/kcheck/_boot"};
  for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
    snprintf(out, n, "%s%s", lib, rel[i]);
    char real[PATH_MAX];
    if (is_dir(out) && realpath(out, real)) {
      snprintf(out, n, "%s", real);
      return 0;
    }
  }
  return -1;
}

/* Is dir one of PYTHONPATH's entries already? */
static int on_path(const char *path, const char *dir) {
  size_t dl = strlen(dir);
  for (const char *p = path; p && *p;) {
    const char *end = strchr(p, ':');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == dl && !strncmp(p, dir, dl)) return 1;
    p += len + (end != NULL);
  }
  return 0;
}

void kc_torch_boot_env(void) {
  if (!torch_requested(getenv("KCHECK_OPTIONS"))) return;
  char dir[PATH_MAX];
  if (boot_dir(dir, sizeof dir)) {
    /* The options are not parsed yet, so no log macro: one plain line. */
    fprintf(stderr, "kcheck: torch=1 but the binding's boot folder (python/kcheck/_boot) was "
                    "not found; set KCHECK_PYTHON to the folder holding the kcheck package\n");
    return;
  }
  const char *old = getenv("PYTHONPATH");
  if (old && on_path(old, dir)) return;
  size_t n = strlen(dir) + (old ? strlen(old) : 0) + 2;
  char *v = malloc(n);
  if (!v) return;
  snprintf(v, n, "%s%s%s", dir, old && *old ? ":" : "", old && *old ? old : "");
  setenv("PYTHONPATH", v, 1);
  free(v);
}
