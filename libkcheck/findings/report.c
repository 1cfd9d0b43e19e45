/* libkcheck/findings/report.c — report file, record emission and the exit summary. */
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cubin_cache.h"
#include "devmem.h"
#include "finding.h"
#include "launch_entry.h"
#include "log.h"
#include "options.h"
#include "prof.h"
#include "report_buf.h"
#include "version.h"

struct kc_counters kc_count;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int out = -1; /* the report file, written through report_buf */
static char path[4096];
static long record_seq;
static int finished;
static struct timespec t0;
/* Set while the summary is written from a signal handler, which may have
 * interrupted a thread holding the lock. */
static volatile sig_atomic_t in_signal;

/* The summary's own_kernels object is written by the shadow executor
 * (exec/), a room above the report: the core registers it at start-up. */
static json_t *(*own_kernels_section)(void);

void kc_report_set_own_kernels(json_t *(*fn)(void)) { own_kernels_section = fn; }

int kc_lock_for_exit(pthread_mutex_t *m) {
  if (!in_signal) return pthread_mutex_lock(m) == 0;
  for (int i = 0; i < 200; i++) { /* up to 0.2 s, then go on without it */
    if (pthread_mutex_trylock(m) == 0) return 1;
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  return 0;
}

double kc_now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec);
}

void kc_report_lock(void) {
  pthread_mutex_lock(&lock);
  kc_rbuf_lock();
}
void kc_report_unlock(void) {
  kc_rbuf_unlock();
  pthread_mutex_unlock(&lock);
}
void kc_report_reset_lock(void) {
  pthread_mutex_init(&lock, NULL);
  kc_rbuf_forget_child();
  out = -1; /* closed by kc_rbuf_forget_child */
}

const char *kc_report_path(void) { return out >= 0 ? path : NULL; }

static void make_path(void) {
  const char *rank = getenv("RANK");
  if (!rank || !*rank) rank = getenv("LOCAL_RANK");
  if (rank && *rank)
    snprintf(path, sizeof path, "%s.%ld.rank%s.jsonl", kc_opt.log_path, (long)getpid(), rank);
  else
    snprintf(path, sizeof path, "%s.%ld.jsonl", kc_opt.log_path, (long)getpid());
}

/* The folders above path that do not exist yet, made 0700 (as
 * ASan's log_path does: a run's report holds the program's data). -1 with
 * errno when one cannot be made. */
static int make_folders(void) {
  char dir[sizeof path];
  snprintf(dir, sizeof dir, "%s", path);
  for (char *p = dir + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(dir, 0700) && errno != EEXIST) return -1;
    *p = '/';
  }
  return 0;
}

/* fatal: the process's own report (kc_report_open), whose absence would
 * read as a clean run: the message says the process exits. */
static int open_file(int fatal) {
  if (!strcmp(kc_opt.log_path, "none")) return 0;
  make_path();
  /* A private file renamed into place (never written through a name
   * someone else planted in a shared folder); O_CLOEXEC: the report must
   * not leak into programs the application execs. */
  int fd = -1;
  if (!make_folders()) fd = kc_file_replace(path);
  if (fd < 0 || kc_rbuf_open(fd)) {
    int e = errno;
    if (fd >= 0) close(fd);
    kc_log_printf(KC_LOG_ERROR, "cannot open report %s: %s; %s", path, strerror(e),
                  fatal ? "exiting (log_path=none runs without a report)"
                        : "continuing without a report");
    return -1;
  }
  out = fd;
  return 0;
}

static json_t *run_record(void) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = 0;
  return json_pack("{s:s, s:s, s:I, s:s, s:o}", "schema", KC_REPORT_SCHEMA, "kcheck_version",
                   KCHECK_VERSION, "pid", (json_int_t)getpid(), "exe", exe, "options",
                   kc_options_to_json());
}

/* Test ids named before the report was open, in order (at most
 * MAX_EARLY_TESTS: a long CPU-only stretch of a suite keeps its first). */
#define MAX_EARLY_TESTS 65536
static pthread_mutex_t early_lock = PTHREAD_MUTEX_INITIALIZER;
static char **early_tests;
static size_t nearly_tests, early_cap;
static int early_drained;

void kc_report_test(const char *id) {
  pthread_mutex_lock(&early_lock);
  if (early_drained) {
    pthread_mutex_unlock(&early_lock);
    kc_report_emit("test", json_pack("{s:s}", "id", id));
    return;
  }
  if (nearly_tests == early_cap && early_cap < MAX_EARLY_TESTS) {
    size_t cap = early_cap ? early_cap * 2 : 64;
    char **grown = realloc(early_tests, cap * sizeof *grown);
    if (grown) early_tests = grown, early_cap = cap;
  }
  /* the same test named twice in a row (its phases) is one record */
  if (nearly_tests < early_cap && !(nearly_tests && !strcmp(early_tests[nearly_tests - 1], id))) {
    char *copy = strdup(id);
    if (copy) early_tests[nearly_tests++] = copy;
  }
  pthread_mutex_unlock(&early_lock);
}

static void drain_early_tests(void) {
  pthread_mutex_lock(&early_lock);
  for (size_t i = 0; i < nearly_tests; i++) {
    kc_report_emit("test", json_pack("{s:s}", "id", early_tests[i]));
    free(early_tests[i]);
  }
  free(early_tests);
  early_tests = NULL;
  nearly_tests = early_cap = 0;
  early_drained = 1;
  pthread_mutex_unlock(&early_lock);
}

int kc_report_open(void) {
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (open_file(1)) return -1;
  kc_report_emit("run", run_record());
  drain_early_tests();
  return 0;
}

void kc_report_reopen_child(long parent_pid) {
  out = -1; /* the parent's: closed by kc_report_reset_lock */
  record_seq = 0;
  finished = 0;
  memset(&kc_count, 0, sizeof kc_count);
  if (open_file(0)) return;
  json_t *r = run_record();
  json_object_set_new(r, "parent_pid", json_integer(parent_pid));
  kc_report_emit("run", r);
}

/* The record's head: type and seq first so records read well with head
 * and grep. Called with the lock held. */
static char *put_dec(char *p, uint64_t v, int width) {
  char b[24];
  int i = sizeof b;
  do
    b[--i] = (char)('0' + v % 10);
  while ((v /= 10) || (int)sizeof b - i < width);
  memcpy(p, b + i, sizeof b - (size_t)i);
  return p + (sizeof b - (size_t)i);
}

/* By hand, not snprintf: trace=1 writes a head per launch, and formatting
 * a double costs more than the rest of the head. t is seconds since the
 * report opened, nanosecond digits. */
static int emit_head(char *buf, size_t cap, const char *type) {
  size_t tn = strlen(type);
  if (cap < tn + 80) return -1;
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  int64_t ns = (int64_t)(t.tv_sec - t0.tv_sec) * 1000000000 + (t.tv_nsec - t0.tv_nsec);
  if (ns < 0) ns = 0;
  char *p = buf;
  memcpy(p, "{\"type\":\"", 9);
  p += 9;
  memcpy(p, type, tn);
  p += tn;
  memcpy(p, "\",\"seq\":", 8);
  p += 8;
  p = put_dec(p, (uint64_t)record_seq++, 1);
  memcpy(p, ",\"t\":", 5);
  p += 5;
  p = put_dec(p, (uint64_t)ns / 1000000000u, 1);
  *p++ = '.';
  p = put_dec(p, (uint64_t)ns % 1000000000u, 9);
  return (int)(p - buf);
}

void kc_report_emit_raw(const char *type, const char *body, size_t n) {
  uint64_t t = kc_prof_now();
  int locked = kc_lock_for_exit(&lock);
  if (out >= 0) {
    char h[128];
    int hn = emit_head(h, sizeof h, type);
    int empty = n < 2 || (n == 2 && body[0] == '{');
    /* body is "{...}": its members follow the head's. */
    struct kc_rbuf_part parts[4] = {
        {h, hn > 0 ? (size_t)hn : 0}, {",", 1}, {body + 1, n - 1}, {"\n", 1}};
    if (empty) parts[1] = (struct kc_rbuf_part){"}", 1}, parts[2].n = 0;
    /* Findings, checks, skips and the rest are written through before the
     * launch that made them returns: a SIGKILL (OOM killer, timeout -s
     * KILL, a scheduler) right after cannot lose them. Only the per-launch
     * trace records go through the ring (a write each would cost trace=1
     * its speed); a kill loses at most those appended since the last
     * record written through. */
    int through = strcmp(type, "launch") != 0;
    if (hn < 0 || (through ? kc_rbuf_appendv_through(parts, 4) : kc_rbuf_appendv(parts, 4)))
      KC_INTERNAL_ERROR("writing the report %s failed", path);
  }
  if (locked) pthread_mutex_unlock(&lock);
  kc_prof_lap(KC_PS_report_write, t);
}

void kc_report_emit(const char *type, json_t *rec) {
  if (!rec) {
    KC_INTERNAL_ERROR("could not build a '%s' record", type);
    return;
  }
  if (out >= 0) {
    uint64_t t = kc_prof_now();
    char *body = json_dumps(rec, JSON_COMPACT | JSON_ENSURE_ASCII);
    kc_prof_lap(KC_PS_report_write, t);
    if (body) {
      kc_report_emit_raw(type, body, strlen(body));
      free(body);
    } else {
      KC_INTERNAL_ERROR("could not serialise a '%s' record", type);
    }
  }
  json_decref(rec);
}

int kc_report_flush(void) { return out >= 0 ? kc_rbuf_flush() : 0; }

json_t *kc_json_addr(uint64_t v) {
  char s[24];
  snprintf(s, sizeof s, "0x%llx", (unsigned long long)v);
  return json_string(s);
}

json_t *kc_json_hash(uint64_t v) {
  char s[24];
  snprintf(s, sizeof s, "%016llx", (unsigned long long)v);
  return json_string(s);
}

void kc_report_finish_signal(int sig) {
  in_signal = 1;
  kc_log_printf(KC_LOG_WARN, "signal %d: writing the summary", sig);
  kc_report_finish();
}

void kc_report_finish(void) {
  /* Findings still being symbolised go before the summary that counts them. */
  if (!finished) kc_findings_drain(in_signal);
  int locked = kc_lock_for_exit(&lock);
  int again = finished;
  finished = 1;
  if (locked) pthread_mutex_unlock(&lock);
  if (again) return;
  long launches = atomic_load(&kc_count.launches), checks = atomic_load(&kc_count.checks),
       viol = atomic_load(&kc_count.violations), skips = atomic_load(&kc_count.skips),
       kernels = atomic_load(&kc_count.kernels), graphs = atomic_load(&kc_count.graph_launches),
       internal = atomic_load(&kc_internal_errors);
  json_t *by = json_object();
  for (int i = 0; i < KC_LE_COUNT; i++)
    json_object_set_new(by, kc_launch_entry_names[i],
                        json_integer(atomic_load(&kc_count.launches_by_entry[i])));
  json_t *sum =
      json_pack("{s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "launches", (json_int_t)launches,
                "launches_by_entry", by, "graph_launches", (json_int_t)graphs, "kernels",
                (json_int_t)kernels, "modules", (json_int_t)atomic_load(&kc_count.modules),
                "checks", (json_int_t)checks, "violations", (json_int_t)viol, "skips",
                (json_int_t)skips, "internal_errors", (json_int_t)internal);
  if (sum) {
    /* Coverage of kernels inside CUDA graphs (graph.c). */
    json_t *gr =
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "instantiated",
                  (json_int_t)atomic_load(&kc_count.graphs), "launches", (json_int_t)graphs,
                  "replayed", (json_int_t)atomic_load(&kc_count.graph_replays), "kernel_launches",
                  (json_int_t)atomic_load(&kc_count.graph_kernel_launches), "kernels_replayed",
                  (json_int_t)atomic_load(&kc_count.graph_kernels_replayed), "kernels_checked",
                  (json_int_t)atomic_load(&kc_count.graph_kernel_checks));
    json_object_set_new(sum, "graphs", gr);
    json_object_set_new(sum, "captured_launches",
                        json_integer(atomic_load(&kc_count.captured_launches)));
    if (kc_opt.restore_check)
      json_object_set_new(sum, "restore_check",
                          json_pack("{s:I, s:I}", "checks",
                                    (json_int_t)atomic_load(&kc_count.restore_checks), "differed",
                                    (json_int_t)atomic_load(&kc_count.restore_differed)));
    kc_findings_summary(sum);
    /* How kcheck's own kernels were loaded, and the device costs behind
     * the checks' floors. */
    if (own_kernels_section) json_object_set_new(sum, "own_kernels", own_kernels_section());
    /* kcheck's own device memory by category, and device_mem_budget */
    json_object_set_new(sum, "device_mem", kc_devmem_summary_json());
    /* SASS-only kernels' cubins read from the cache or from their image */
    long hits = 0, misses = 0;
    kc_cubin_cache_counts(&hits, &misses);
    if (hits + misses)
      json_object_set_new(
          sum, "cubin_cache",
          json_pack("{s:I, s:I}", "hits", (json_int_t)hits, "misses", (json_int_t)misses));
  }
  kc_report_emit("summary", sum);
  if (kc_opt.verbosity >= 1 || viol) {
    /* With violations the summary is printed even at verbosity=0. */
    int lvl = viol ? KC_LOG_ERROR : KC_LOG_WARN;
    kc_log_printf(lvl,
                  "%ld launches (%ld cuLaunchKernel, %ld cuLaunchKernelEx, %ld cooperative), "
                  "%ld graph launches, %ld distinct kernels",
                  launches, atomic_load(&kc_count.launches_by_entry[0]),
                  atomic_load(&kc_count.launches_by_entry[1]),
                  atomic_load(&kc_count.launches_by_entry[2]), graphs, kernels);
    if (graphs || atomic_load(&kc_count.graphs))
      kc_log_printf(lvl,
                    "CUDA graphs: %ld instantiated, %ld launches (%ld replayed node by node); "
                    "%ld kernel launches inside graphs, %ld of them checked",
                    atomic_load(&kc_count.graphs), graphs, atomic_load(&kc_count.graph_replays),
                    atomic_load(&kc_count.graph_kernel_launches),
                    atomic_load(&kc_count.graph_kernel_checks));
    kc_log_printf(lvl, "%ld checks, %ld skipped, %ld internal errors", checks, skips, internal);
    long bugs = kc_findings_print_summary();
    if (kc_report_path()) kc_log_printf(lvl, "report: %s", path);
    char line[256];
    /* violations are occurrences; bugs group them by code sites (bug.h) */
    snprintf(line, sizeof line,
             "SUMMARY: kcheck: %ld violation%s in %ld check%s of %ld launches%s%.0ld%s\n", viol,
             viol == 1 ? "" : "s", checks, checks == 1 ? "" : "s", launches, bugs ? ": " : "", bugs,
             bugs ? (bugs == 1 ? " bug" : " bugs") : "");
    ssize_t w = write(kc_log_fd, line, strlen(line));
    (void)w;
  }
  locked = kc_lock_for_exit(&lock);
  int was_open = out >= 0;
  out = -1;
  if (locked) pthread_mutex_unlock(&lock);
  if (was_open) kc_rbuf_close();
}
