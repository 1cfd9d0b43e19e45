/* libkcheck/base/log.h — kcheck's own messages on stderr. Every line starts with
 * "kcheck: "; arguments are not evaluated below the current verbosity.
 * Internal failures are logged once per site and counted for the summary. */
#ifndef KC_LOG_H
#define KC_LOG_H

#include <stdatomic.h>

enum kc_level { KC_LOG_ERROR = 0, KC_LOG_WARN = 1, KC_LOG_INFO = 2, KC_LOG_DEBUG = 3 };

extern int kc_verbosity;
extern atomic_long kc_internal_errors;

/* Where kcheck's text goes: stderr, or the log_file option's file. */
extern int kc_log_fd;
/* Opens log_file (after the options are parsed); -1 with a line on stderr
 * when it cannot be opened (the text stays on stderr). */
int kc_log_open(const char *pattern);
void kc_log_printf(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define KC_LOG(level, ...)                                                                         \
  do {                                                                                             \
    if ((level) <= kc_verbosity) kc_log_printf((level), __VA_ARGS__);                              \
  } while (0)

/* An internal failure: counted every time, printed the first time this call
 * site hits it. The launch that hit it must then pass through untouched. */
#define KC_INTERNAL_ERROR(...)                                                                     \
  do {                                                                                             \
    static atomic_int kc_once_;                                                                    \
    atomic_fetch_add(&kc_internal_errors, 1);                                                      \
    if (!atomic_exchange(&kc_once_, 1))                                                            \
      kc_log_printf(KC_LOG_ERROR, "internal error: " __VA_ARGS__);                                 \
  } while (0)

/* Defensive branches that should never be taken (SQLite's NEVER()). */
#define KC_NEVER(cond) __builtin_expect(!!(cond), 0)

/* An internal invariant (cheap to test). The test build (KC_CHECKED: the
 * sanitizer build `make test` uses) aborts on a broken one, naming it; the
 * release build counts an internal error and goes on, so a host is never
 * crashed by kcheck's own bug. */
#ifdef KC_CHECKED
#define KC_ASSERT(cond) ((cond) ? (void)0 : kc_assert_failed(#cond, __FILE__, __LINE__))
#else
#define KC_ASSERT(cond)                                                                            \
  do {                                                                                             \
    if (KC_NEVER(!(cond)))                                                                         \
      KC_INTERNAL_ERROR("invariant '%s' broken at %s:%d", #cond, __FILE__, __LINE__);              \
  } while (0)
#endif
void kc_assert_failed(const char *what, const char *file, int line) __attribute__((noreturn));

/* Files kcheck writes (docs/security.md). Paths often lie in a shared,
 * world-writable place (/tmp): a name another user planted there (a
 * symlink to a file of the user running kcheck, or a file of their own)
 * must never be written through.
 *
 * kc_file_replace: a new private file (0600) made under a random name
 * beside path (O_EXCL, so no symlink is followed) and renamed to path: the
 * name then refers to kcheck's file whatever it was (rename replaces a
 * planted symlink itself, never its target). An fd open for writing
 * (O_CLOEXEC), or -1 with errno. */
int kc_file_replace(const char *path);
/* A new file (0600) that must not exist (O_EXCL | O_NOFOLLOW): inside a
 * directory kcheck made for itself. An fd, or -1 with errno. */
int kc_file_create(const char *path);
/* A directory kcheck writes into: made 0700, or an existing one that is a
 * real directory (not a symlink) owned by this user. must_be_new: it must
 * not exist yet. 0, or -1 with errno (EEXIST, or EPERM: not ours). */
int kc_dir_create(const char *path, int must_be_new);

#endif
