/* libkcheck/base/log.c — prefixed, single-write stderr logging. One write(2) per
 * line so lines from several threads and processes never interleave. */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int kc_verbosity = 1;
int kc_log_fd = STDERR_FILENO;

int kc_log_open(const char *pattern) {
  if (!pattern || !*pattern) return 0;
  char path[4096];
  size_t n = 0;
  for (const char *p = pattern; *p && n < sizeof path - 24; p++) {
    if (p[0] == '%' && p[1] == 'p') {
      n += (size_t)snprintf(path + n, sizeof path - n, "%ld", (long)getpid());
      p++;
    } else {
      path[n++] = *p;
    }
  }
  path[n] = 0;
  /* O_APPEND: processes of one run sharing a file never overwrite each
   * other's lines (each line is one write). */
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    kc_log_printf(KC_LOG_ERROR, "log_file=%s: cannot open %s: %s; writing to stderr", pattern, path,
                  strerror(errno));
    return -1;
  }
  kc_log_fd = fd;
  return 0;
}
atomic_long kc_internal_errors;

void kc_log_printf(int level, const char *fmt, ...) {
  /* verbosity=0: errors only (warnings too must respect it, not only the
   * KC_LOG macro's callers). */
  if (level > kc_verbosity) return;
  char line[2048];
  int n = snprintf(line, sizeof line, "kcheck: ");
  va_list ap;
  va_start(ap, fmt);
  // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): va_start just above
  int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  va_end(ap);
  size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
  if (len > sizeof line - 2) len = sizeof line - 2;
  if (len == 0 || line[len - 1] != '\n') line[len++] = '\n';
  ssize_t w = write(kc_log_fd, line, len);
  (void)w;
}

void kc_assert_failed(const char *what, const char *file, int line) {
  kc_log_printf(KC_LOG_ERROR, "internal invariant '%s' broken at %s:%d", what, file, line);
  abort();
}

int kc_file_replace(const char *path) {
  size_t n = strlen(path);
  char *tmp = malloc(n + 8);
  if (!tmp) {
    errno = ENOMEM;
    return -1;
  }
  memcpy(tmp, path, n);
  memcpy(tmp + n, ".XXXXXX", 8);
  int fd = mkostemp(tmp, O_CLOEXEC); /* 0600, O_EXCL */
  if (fd >= 0 && rename(tmp, path)) {
    int e = errno;
    unlink(tmp);
    close(fd);
    fd = -1;
    errno = e;
  }
  free(tmp);
  return fd;
}

int kc_file_create(const char *path) {
  return open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
}

int kc_dir_create(const char *path, int must_be_new) {
  if (mkdir(path, 0700) == 0) return 0;
  if (errno != EEXIST || must_be_new) return -1;
  struct stat st;
  if (lstat(path, &st)) return -1;
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
    errno = EPERM;
    return -1;
  }
  return 0;
}
