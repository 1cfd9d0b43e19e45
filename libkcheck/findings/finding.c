/* libkcheck/findings/finding.c — what happens to a violation once a gate has
 * described it: the one place where it is attributed (test id), symbolised,
 * suppressed, de-duplicated by (gate, kernel, signature), grouped into
 * bugs by its code sites (bug.h: one block per bug), counted, written to
 * the report and printed on stderr as a finding block (ASan-style, one
 * write so blocks of several threads never interleave). */
#include "finding.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bug.h"
#include "guard.h"
#include "log.h"
#include "options.h"
#include "pyframes.h"
#include "report.h"
#include "stack.h"
#include "stack_snap.h"
#include "suppress.h"
#include "symbolize.h"
#include "thread.h"

#define MAX_KEYS 4096
#define BLOCK_BYTES 8192

struct key {
  char gate[32];
  long kernel;
  char sig[24];
  long count, first_launch;
  int suppressed; /* its first occurrence was suppressed: so are repeats */
  int bug;        /* its slot in bug.c's table (-1 none yet) */
  char kernel_name[160];
};
static struct key keys[MAX_KEYS];
static int nkeys;
static long printed, suppressed, unique, repeats;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* The whole id, however long: the pytest plugin matches a violation to its
 * test by equality, so a truncated id (a long parametrised one) would let
 * the test that caused the violation pass. NULL: no test. */
static char *test_id;

void kc_finding_set_test(const char *id) {
  char *copy = id && *id ? strdup(id) : NULL;
  pthread_mutex_lock(&lock);
  free(test_id);
  test_id = copy;
  pthread_mutex_unlock(&lock);
}

int kc_findings_init(void) {
  const char *t = getenv("KCHECK_TEST"); /* a test id inherited from a parent (spawn, exec) */
  if (t) kc_finding_set_test(t);
  return kc_suppress_load(kc_opt.suppressions);
}

/* ---------------------------------------------------------- text helpers */

struct buf {
  char s[BLOCK_BYTES];
  size_t n;
};

__attribute__((format(printf, 2, 3))) static void add(struct buf *b, const char *fmt, ...) {
  if (b->n >= sizeof b->s - 1) return;
  va_list ap;
  va_start(ap, fmt);
  // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): va_start just above
  int m = vsnprintf(b->s + b->n, sizeof b->s - b->n, fmt, ap);
  va_end(ap);
  if (m > 0) b->n += (size_t)m;
  if (b->n > sizeof b->s - 1) b->n = sizeof b->s - 1;
}

static const char *str(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

/* A JSON scalar as text ("" for others). */
static void scalar_text(json_t *v, char *out, size_t n) {
  out[0] = 0;
  if (json_is_string(v))
    snprintf(out, n, "%s", json_string_value(v));
  else if (json_is_integer(v))
    snprintf(out, n, "%lld", (long long)json_integer_value(v));
  else if (json_is_real(v))
    snprintf(out, n, "%.9g", json_real_value(v));
  else if (json_is_boolean(v))
    snprintf(out, n, "%s", json_is_true(v) ? "true" : "false");
  else if (json_is_array(v)) {
    size_t at = 0, i;
    json_t *e;
    at += (size_t)snprintf(out + at, n - at, "[");
    json_array_foreach(v, i, e) {
      char one[48];
      scalar_text(e, one, sizeof one);
      if (at < n) at += (size_t)snprintf(out + at, n - at, "%s%s", i ? "," : "", one);
    }
    if (at < n) snprintf(out + at, n - at, "]");
  }
}

/* expected/got of determinism and race: {bits32, int32, fp32, ...}. */
static void word_text(json_t *w, char *out, size_t n) {
  snprintf(out, n, "%s (fp32 %.9g, int32 %lld)", str(w, "bits32"),
           json_real_value(json_object_get(w, "fp32")),
           (long long)json_integer_value(json_object_get(w, "int32")));
}

static void evidence_words(struct buf *b, json_t *rec) {
  json_t *ev = json_object_get(rec, "evidence");
  add(b, "kcheck:   evidence:   %s\n", str(rec, "message"));
  if (!json_is_object(ev)) return;
  if (json_object_get(ev, "verdict_line")) {
    add(b, "kcheck:               %s\n", str(ev, "verdict_line"));
  } else if (json_object_get(ev, "expected") && json_object_get(ev, "got")) {
    char e[96], g[96];
    word_text(json_object_get(ev, "expected"), e, sizeof e);
    word_text(json_object_get(ev, "got"), g, sizeof g);
    json_t *al = json_object_get(ev, "allocation");
    add(b,
        "kcheck:               first difference at byte %lld of allocation %s (%lld bytes): "
        "expected %s, got %s; %lld differing 32-bit word(s)\n",
        (long long)json_integer_value(json_object_get(ev, "offset")), str(al, "base"),
        (long long)json_integer_value(json_object_get(al, "size")), e, g,
        (long long)json_integer_value(json_object_get(ev, "differing_words")));
  } else {
    /* Contract gates' byte evidence: its scalar fields in words. */
    char line[1024] = "";
    size_t at = 0;
    const char *k;
    json_t *v;
    json_object_foreach(ev, k, v) {
      if (!strcmp(k, "exposed_by") || json_is_object(v)) continue;
      char t[160];
      scalar_text(v, t, sizeof t);
      if (t[0] && at < sizeof line)
        at += (size_t)snprintf(line + at, sizeof line - at, "%s%s %s", at ? ", " : "", k, t);
    }
    if (line[0]) add(b, "kcheck:               %s\n", line);
  }
  /* What exposed it: race strategies, or generated inputs and their seed. */
  json_t *strat = json_object_get(rec, "exposed_by");
  if (json_is_array(strat)) {
    char t[256];
    scalar_text(strat, t, sizeof t);
    add(b, "kcheck:   exposed by: strategies %s (first: %s, run %lld, seed %lld)\n", t,
        str(ev, "strategy"), (long long)json_integer_value(json_object_get(ev, "run")),
        (long long)json_integer_value(json_object_get(ev, "seed")));
  }
  json_t *ex = json_object_get(ev, "exposed_by");
  if (json_is_object(ex)) {
    if (!strcmp(str(ex, "inputs"), "generated"))
      add(b, "kcheck:   exposed by: generated inputs %s%s%s, seed %lld\n", str(ex, "generator"),
          json_object_get(ex, "transform") ? " transform " : "", str(ex, "transform"),
          (long long)json_integer_value(json_object_get(ex, "seed")));
    else
      add(b, "kcheck:   exposed by: the application's own inputs\n");
  }
}

/* ------------------------------------------------------- reproduce line */

/* Appends s single-quoted for sh. */
static void shq(struct buf *b, const char *s) {
  if (*s && !strpbrk(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~")) {
    add(b, "%s", s);
    return;
  }
  add(b, "'");
  for (; *s; s++)
    if (*s == '\'')
      add(b, "'\\''");
    else
      add(b, "%c", *s);
  add(b, "'");
}

/* The command that re-runs this process with only this launch checked by
 * this gate, at the same seed. */
static void reproduce(struct buf *b, json_t *rec) {
  char cwd[2048];
  if (getcwd(cwd, sizeof cwd)) {
    add(b, "cd ");
    shq(b, cwd);
    add(b, " && ");
  }
  /* The user's options less unknown keys (already warned about). */
  char known[2048] = "";
  const char *opts = getenv("KCHECK_OPTIONS");
  json_t *names = kc_options_to_json();
  if (opts && names) {
    char copy[2048];
    snprintf(copy, sizeof copy, "%s", opts);
    size_t at = 0;
    char *save = NULL;
    for (char *item = strtok_r(copy, ":", &save); item; item = strtok_r(NULL, ":", &save)) {
      char key[128];
      snprintf(key, sizeof key, "%.*s", (int)strcspn(item, "="), item);
      if (json_object_get(names, key) && at < sizeof known)
        at += (size_t)snprintf(known + at, sizeof known - at, "%s%s", at ? ":" : "", item);
    }
  }
  json_decref(names);
  char o[2048];
  snprintf(o, sizeof o, "%s%sgates=%s:seed=%lld:launch_skip=%lld:launch_count=1", known,
           known[0] ? ":" : "", str(rec, "gate"),
           (long long)json_integer_value(json_object_get(rec, "seed")),
           (long long)json_integer_value(json_object_get(rec, "launch")));
  add(b, "KCHECK_OPTIONS=");
  shq(b, o);
  static const char *const env[] = {"LD_PRELOAD", "LD_LIBRARY_PATH", "KCHECK_TEST", NULL};
  for (int i = 0; env[i]; i++) {
    const char *v = getenv(env[i]);
    if (!v) continue;
    add(b, " %s=", env[i]);
    shq(b, v);
  }
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char cmd[4096];
  ssize_t n = read(fd, cmd, sizeof cmd - 1);
  close(fd);
  if (n <= 0) return;
  cmd[n] = 0;
  for (char *p = cmd; p < cmd + n; p += strlen(p) + 1) {
    add(b, " ");
    shq(b, p);
  }
}

/* ------------------------------------------------------------ the block */

/* Both operations of a two-sided finding (stream_order, stream_delay),
 * each with the line it came from, and the bug's sites. */
static void sides_text(struct buf *b, json_t *rec) {
  json_t *ev = json_object_get(rec, "evidence");
  static const char *const names[][2] = {
      {"first", "first:   "}, {"second", "second:  "}, {"delayed", "delayed: "}};
  for (int i = 0; i < 3; i++) {
    json_t *side = json_object_get(ev, names[i][0]);
    if (!json_is_object(side)) continue;
    char where[400];
    kc_site_label(json_object_get(side, "stack"), where, sizeof where);
    add(b, "kcheck:   %s   %s on stream %lld at %s\n", names[i][1], str(side, "op"),
        (long long)json_integer_value(json_object_get(side, "stream")), where);
  }
  json_t *sites = json_object_get(rec, "sites");
  if (json_object_get(rec, "bug"))
    add(b,
        "kcheck:   bug:        %s (%zu site%s: occurrences at the same sites are this bug, counted "
        "in the summary)\n",
        str(rec, "bug"), json_array_size(sites), json_array_size(sites) == 1 ? "" : "s");
}

static void print_block(json_t *rec, long repeat) {
  struct buf *b = calloc(1, sizeof *b);
  if (!b) return;
  add(b, "kcheck: ==== violation in %s [%s]\n", str(rec, "kernel_name"), str(rec, "gate"));
  if (json_object_get(rec, "gate_contract"))
    add(b, "kcheck:   contract:   %s\n", str(rec, "gate_contract"));
  json_t *g = json_object_get(rec, "grid"), *bl = json_object_get(rec, "block");
  add(b, "kcheck:   kernel:     %s\n", str(rec, "kernel_name"));
  add(b,
      "kcheck:   launch:     #%lld of the process, grid [%lld,%lld,%lld] block [%lld,%lld,%lld], "
      "signature %s%s\n",
      (long long)json_integer_value(json_object_get(rec, "launch")),
      (long long)json_integer_value(json_array_get(g, 0)),
      (long long)json_integer_value(json_array_get(g, 1)),
      (long long)json_integer_value(json_array_get(g, 2)),
      (long long)json_integer_value(json_array_get(bl, 0)),
      (long long)json_integer_value(json_array_get(bl, 1)),
      (long long)json_integer_value(json_array_get(bl, 2)), str(rec, "signature"),
      repeat > 1 ? " (seen before)" : "");
  json_t *gr = json_object_get(rec, "graph");
  if (json_is_object(gr))
    add(b,
        "kcheck:   graph:      node %lld of %lld of CUDA graph %lld (its launch %lld), replayed "
        "node by node\n",
        (long long)json_integer_value(json_object_get(gr, "node")),
        (long long)json_integer_value(json_object_get(gr, "nodes")),
        (long long)json_integer_value(json_object_get(gr, "graph")),
        (long long)json_integer_value(json_object_get(gr, "graph_launch")));
  if (json_object_get(rec, "test")) add(b, "kcheck:   test:       %s\n", str(rec, "test"));
  evidence_words(b, rec);
  if (json_object_get(rec, "contract"))
    add(b, "kcheck:   contract file: %s\n", str(rec, "contract"));
  sides_text(b, rec);
  json_t *stack = json_object_get(rec, "stack");
  json_t *py = kc_user_frame(json_object_get(stack, "python"));
  if (py)
    add(b, "kcheck:   python:     File \"%s\", line %lld, in %s\n", str(py, "file"),
        (long long)json_integer_value(json_object_get(py, "line")), str(py, "function"));
  else if (json_object_get(stack, "python_not_taken"))
    add(b, "kcheck:   python:     not taken: %s\n", str(stack, "python_not_taken"));
  size_t i;
  json_t *fr;
  json_array_foreach(json_object_get(stack, "host"), i, fr) {
    if (i >= 12) {
      add(b, "kcheck:     ... %zu more frames in the report\n",
          json_array_size(json_object_get(stack, "host")) - i);
      break;
    }
    const char *sym = str(fr, "symbol"), *mod = str(fr, "module");
    const char *base = strrchr(mod, '/') ? strrchr(mod, '/') + 1 : mod;
    if (json_object_get(fr, "file"))
      add(b, "kcheck:     #%zu %s at %s:%lld (%s)\n", i, sym[0] ? sym : "??", str(fr, "file"),
          (long long)json_integer_value(json_object_get(fr, "line")), base);
    else
      add(b, "kcheck:     #%zu %s (%s+%s)\n", i, sym[0] ? sym : "??", base, str(fr, "offset"));
  }
  add(b, "kcheck:   reproduce:  %s\n", str(rec, "reproduce"));
  /* A suppressions=FILE line that silences it, as `kcheck report
   * --gen-suppressions` writes it (report.py's suppression_line): the
   * demangled name up to its argument list, glob characters escaped. */
  add(b, "kcheck:   suppress:   %s:", str(rec, "gate"));
  const char *kn = str(rec, "kernel_name"), *paren = strchr(kn, '(');
  size_t kl = paren ? (size_t)(paren - kn) : strlen(kn);
  while (kl && kn[kl - 1] == ' ')
    kl--;
  for (size_t k = 0; k < kl; k++)
    add(b, strchr("*?[", kn[k]) ? "[%c]" : "%c", kn[k]);
  add(b, "%s\n", paren ? "(*" : "");
  ssize_t w = write(kc_log_fd, b->s, b->n);
  (void)w;
  free(b);
}

/* The key's slot, made when new (NULL when the table is full). */
static struct key *find_key(const char *gate, long kernel, const char *sig, const char *kname,
                            long launch, int *made) {
  *made = 0;
  for (int i = 0; i < nkeys; i++)
    if (keys[i].kernel == kernel && !strcmp(keys[i].gate, gate) && !strcmp(keys[i].sig, sig))
      return &keys[i];
  if (nkeys == MAX_KEYS) return NULL;
  struct key *k = &keys[nkeys++];
  memset(k, 0, sizeof *k);
  snprintf(k->gate, sizeof k->gate, "%s", gate);
  snprintf(k->sig, sizeof k->sig, "%s", sig);
  snprintf(k->kernel_name, sizeof k->kernel_name, "%s", kname);
  k->kernel = kernel;
  k->first_launch = launch;
  k->bug = -1;
  *made = 1;
  return k;
}

/* n-th occurrence (1-based) of the record's (gate, kernel, signature);
 * *bug_n: that of its bug (bug.h), which decides what is printed. */
static long count_key(json_t *rec, int is_suppressed, long *bug_n) {
  int bug = -1;
  *bug_n = kc_bug_note(rec, is_suppressed, &bug);
  if (!json_object_get(rec, "signature")) { /* op-level records: each one is new */
    if (!is_suppressed) unique++;
    return 1;
  }
  int made;
  struct key *k =
      find_key(str(rec, "gate"), (long)json_integer_value(json_object_get(rec, "kernel")),
               str(rec, "signature"), str(rec, "kernel_name"),
               (long)json_integer_value(json_object_get(rec, "launch")), &made);
  if (made && !is_suppressed) unique++;
  if (!k) return 1; /* table full: counted as new */
  k->suppressed = is_suppressed;
  if (bug >= 0) k->bug = bug;
  return ++k->count;
}

static void repeat_now(const char *gate, long kernel, const char *kernel_name, const char *sig,
                       int n) {
  pthread_mutex_lock(&lock);
  int made;
  struct key *k = find_key(gate, kernel, sig, kernel_name, -1, &made);
  if (k) k->count += n;
  if (k) kc_bug_repeat(k->bug, n);
  if (k && k->suppressed)
    suppressed += n;
  else
    repeats += n;
  pthread_mutex_unlock(&lock);
}

/* Unwinds snap (when there is one) into rec's host frames, symbolises
 * them, applies the suppressions, counts, writes and prints rec. Takes rec
 * and snap. */
static int report_now(json_t *rec, struct kc_stack_snap *snap) {
  kc_guard_enter();
  json_t *stack = json_object_get(rec, "stack");
  if (snap && stack) {
    json_t *unwound = kc_stack_snap_host(snap);
    if (unwound) {
      json_object_set_new(stack, "host", unwound);
      /* unwound here from the copy the check took (stack_snap.h) */
      json_object_set_new(stack, "host_from_copy", json_true());
    } else
      json_object_set_new(
          stack, "host_not_taken",
          json_string("the copy of the launching thread's stack could not be unwound"));
  }
  kc_stack_snap_free(snap);
  /* every stack of the finding: the launch's, and both sides' of a
   * two-sided one (which make its bug, bug.h) */
  json_t *ev = json_object_get(rec, "evidence");
  json_t *stacks[4] = {stack, json_object_get(json_object_get(ev, "first"), "stack"),
                       json_object_get(json_object_get(ev, "second"), "stack"),
                       json_object_get(json_object_get(ev, "delayed"), "stack")};
  kc_symbolize_stacks(stacks, 4);
  kc_guard_leave();

  pthread_mutex_lock(&lock);
  const char *rule = kc_suppress_match(rec);
  if (rule) {
    suppressed++;
    long ignored;
    count_key(rec, 1, &ignored);
    pthread_mutex_unlock(&lock);
    json_object_set_new(rec, "suppressed_by", json_string(rule));
    KC_LOG(KC_LOG_INFO, "violation in %s [%s] suppressed by %s", str(rec, "kernel_name"),
           str(rec, "gate"), rule);
    kc_report_emit("suppressed", rec);
    return 0;
  }
  long occurrence;
  long repeat = count_key(rec, 0, &occurrence);
  /* one block per bug: later occurrences (other operations, sizes,
   * kernels at the same sites) are counted, not printed */
  int show = occurrence == 1 && (kc_opt.print_limit < 0 || printed < kc_opt.print_limit);
  int limit_note = occurrence == 1 && !show && printed == kc_opt.print_limit;
  if (show || limit_note) printed++;
  pthread_mutex_unlock(&lock);

  atomic_fetch_add(&kc_count.violations, 1);
  json_object_set_new(rec, "repeat", json_integer(repeat));
  json_object_set_new(rec, "occurrence", json_integer(occurrence));
  struct buf *b = calloc(1, sizeof *b);
  if (b) {
    reproduce(b, rec);
    json_object_set_new(rec, "reproduce", json_string(b->s));
    free(b);
  }
  if (show)
    print_block(rec, repeat);
  else if (limit_note)
    kc_log_printf(KC_LOG_ERROR,
                  "print_limit=%ld findings printed; further ones are only in the report",
                  kc_opt.print_limit);
  kc_report_emit("violation", rec);
  return 1;
}

/* ---- deferred findings: a check takes the stack (module and offset of
 * each frame, microseconds) and the test id where the violation happened;
 * naming the frames (symbol tables, DWARF lines: 100-260 ms at a finding
 * in a PyTorch process), suppressions, the record and the finding block
 * follow on a thread of kcheck's own, in order, with the repeats of later
 * checks queued behind the record they repeat. The exit (and a fatal
 * signal, without symbols) writes what is still queued before the
 * summary. halt_on_error and a forked child report at once. */
struct pending {
  struct pending *next;
  json_t *rec;                /* a violation record, or NULL for a repeat: */
  struct kc_stack_snap *snap; /* rec's host stack, not yet unwound */
  char gate[32], sig[24], kernel_name[160];
  long kernel;
  int n;
};
static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_wake = PTHREAD_COND_INITIALIZER, q_idle = PTHREAD_COND_INITIALIZER;
static struct pending *q_head, *q_tail;
static int q_busy;       /* the worker is reporting one it took */
static int worker_state; /* 0 not started, 1 running, -1 unavailable */
/* Queued or being reported: polled by a signal handler, which takes no lock. */
static atomic_int outstanding;
/* Findings queued with a stack copy at most (32 MiB of copies) */
#define MAX_SNAPS_QUEUED 64
/* A forked child reports at once: such children often end with _exit
 * (multiprocessing's fork workers, os._exit), which runs no exit drain. */
static int forked_child;
static void mark_forked(void) { forked_child = 1; }
/* At load, not at activation: a process may fork before its first CUDA
 * call (then kcheck activates in the child as in a fresh process). */
__attribute__((constructor)) static void findings_atfork(void) {
  pthread_atfork(NULL, NULL, mark_forked);
}
static pthread_t worker;

static void run_pending(struct pending *p) {
  if (p->rec)
    report_now(p->rec, p->snap);
  else
    repeat_now(p->gate, p->kernel, p->kernel_name, p->sig, p->n);
  free(p);
}

static void *worker_main(void *arg) {
  (void)arg;
  kc_guard_enter(); /* whatever it calls is kcheck's own */
  pthread_mutex_lock(&q_lock);
  for (;;) {
    while (!q_head) {
      q_busy = 0;
      pthread_cond_broadcast(&q_idle);
      pthread_cond_wait(&q_wake, &q_lock);
    }
    struct pending *p = q_head;
    q_head = p->next;
    if (!q_head) q_tail = NULL;
    q_busy = 1;
    pthread_mutex_unlock(&q_lock);
    run_pending(p);
    atomic_fetch_sub(&outstanding, 1);
    pthread_mutex_lock(&q_lock);
  }
  return NULL;
}

/* Queues p (1), or 0 when it must be reported now (halt_on_error, no
 * worker). */
static int enqueue(struct pending *p) {
  if (kc_opt.halt_on_error || forked_child) return 0;
  pthread_mutex_lock(&q_lock);
  if (worker_state == 0) {
    worker_state = kc_thread_start(&worker, 1, worker_main, NULL) ? -1 : 1;
  }
  int queued = worker_state == 1;
  if (queued) {
    p->next = NULL;
    if (q_tail)
      q_tail->next = p;
    else
      q_head = p;
    q_tail = p;
    q_busy = 1;
    atomic_fetch_add(&outstanding, 1);
    pthread_cond_signal(&q_wake);
  }
  pthread_mutex_unlock(&q_lock);
  return queued;
}

void kc_findings_drain(int in_signal) {
  if (in_signal) {
    /* The worker blocks every signal, so it goes on while the handler
     * runs: up to 2 s for it to finish (polled, no lock); what it did not
     * get to is written here, its frames as module and offset. */
    for (int i = 0; i < 2000 && atomic_load(&outstanding) > 0; i++) {
      struct timespec ms = {0, 1000000};
      nanosleep(&ms, NULL);
    }
    if (pthread_mutex_trylock(&q_lock)) return;
    struct pending *p = q_head;
    q_head = q_tail = NULL;
    pthread_mutex_unlock(&q_lock);
    while (p) {
      struct pending *next = p->next;
      atomic_fetch_sub(&outstanding, 1);
      if (p->rec) {
        /* no unwinding in a signal handler: the snapshot is left (the
         * process is ending) and the record says so */
        if (p->snap)
          json_object_set_new(json_object_get(p->rec, "stack"), "host_not_taken",
                              json_string("the process ended before the stack was unwound"));
        atomic_fetch_add(&kc_count.violations, 1);
        kc_report_emit("violation", p->rec);
      }
      free(p);
      p = next;
    }
    return;
  }
  /* Bounded: a worker held up (a lock of a thread that is gone) must not
   * hold up the exit; what it did not get to is written as it is. */
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 10;
  pthread_mutex_lock(&q_lock);
  int late = 0;
  while (!late && (q_head || (worker_state == 1 && q_busy)))
    late = pthread_cond_timedwait(&q_idle, &q_lock, &until) != 0;
  pthread_mutex_unlock(&q_lock);
  if (late) {
    KC_INTERNAL_ERROR("findings still being reported at exit: written without symbols");
    kc_findings_drain(1);
  }
}

void kc_finding_repeat(const char *gate, long kernel, const char *kernel_name,
                       unsigned long long signature, int n) {
  char sig[24];
  snprintf(sig, sizeof sig, "%016llx", signature);
  struct pending *p = calloc(1, sizeof *p);
  if (p) {
    snprintf(p->gate, sizeof p->gate, "%s", gate);
    snprintf(p->sig, sizeof p->sig, "%s", sig);
    snprintf(p->kernel_name, sizeof p->kernel_name, "%s", kernel_name ? kernel_name : "");
    p->kernel = kernel;
    p->n = n;
    if (enqueue(p)) return;
    free(p);
  }
  repeat_now(gate, kernel, kernel_name, sig, n);
}

int kc_finding_report(json_t *rec) {
  if (!rec) return 0;
  /* Where it happened, now: the launching thread's frames and the test. */
  kc_guard_enter();
  struct kc_stack_snap *snap = NULL;
  /* The host frames are unwound on the findings thread, from a copy of
   * this thread's stack, unless the queue is long (each copy holds
   * KC_STACK_SNAP_BYTES). */
  if (!json_object_get(rec, "stack"))
    json_object_set_new(rec, "stack",
                        atomic_load(&outstanding) < MAX_SNAPS_QUEUED
                            ? kc_stack_json_deferred(3, &snap)
                            : kc_stack_json_fast(3));
  kc_guard_leave();
  pthread_mutex_lock(&lock);
  if (test_id && !json_object_get(rec, "test"))
    json_object_set_new(rec, "test", json_string(test_id));
  pthread_mutex_unlock(&lock);
  /* Queued, the record is written when the findings thread gets to it
   * (symbols take 100-260 ms): a SIGKILL before that would lose it. So
   * what is known now is written through first, as violation_pending with
   * an id the final violation (or suppressed) record repeats; readers
   * (kcheck.report) keep a pending record only where its final one is
   * missing. */
  if (!kc_opt.halt_on_error && !forked_child) {
    static atomic_long next_pending;
    json_object_set_new(rec, "pending", json_integer(atomic_fetch_add(&next_pending, 1) + 1));
    kc_report_emit("violation_pending", json_deep_copy(rec));
  }
  struct pending *p = calloc(1, sizeof *p);
  if (p) {
    p->rec = rec;
    p->snap = snap;
    if (enqueue(p)) return 1; /* counted as a violation unless suppressed */
    free(p);
  }
  return report_now(rec, snap);
}

void kc_findings_summary(json_t *summary) {
  int locked = kc_lock_for_exit(&lock);
  json_object_set_new(summary, "unique_violations", json_integer(unique));
  json_object_set_new(summary, "suppressed", json_integer(suppressed));
  json_object_set_new(summary, "repeats", json_integer(repeats));
  /* Violations per gate, so that nondeterminism (atomic order) and race
   * findings are counted apart. */
  json_t *by = json_object();
  for (int i = 0; by && i < nkeys; i++) {
    if (keys[i].suppressed) continue;
    json_t *c = json_object_get(by, keys[i].gate);
    json_object_set_new(by, keys[i].gate,
                        json_integer((c ? json_integer_value(c) : 0) + keys[i].count));
  }
  json_object_set_new(summary, "violations_by_gate", by);
  kc_bugs_summary(summary);
  /* how the Python frames of threads that released the GIL were read */
  json_t *pf = kc_pyframes_summary();
  if (pf) json_object_set_new(summary, "python_frames", pf);
  if (locked) pthread_mutex_unlock(&lock);
}

long kc_findings_print_summary(void) {
  int locked = kc_lock_for_exit(&lock);
  long nbugs = kc_bugs_print_summary();
  char line[512] = "";
  size_t at = 0;
  for (int i = 0; i < nkeys; i++) {
    if (keys[i].suppressed) continue;
    int first = 1;
    long total = 0;
    for (int j = 0; j < nkeys; j++) {
      if (keys[j].suppressed || strcmp(keys[j].gate, keys[i].gate)) continue;
      if (j < i) first = 0;
      total += keys[j].count;
    }
    if (first && at < sizeof line)
      at += (size_t)snprintf(line + at, sizeof line - at, "%s%s %ld", at ? ", " : "", keys[i].gate,
                             total);
  }
  if (line[0]) kc_log_printf(KC_LOG_WARN, "violations by gate: %s", line);
  for (int i = 0; i < nkeys; i++)
    if (keys[i].count > 1 && !keys[i].suppressed)
      kc_log_printf(KC_LOG_WARN, "%ld violations of [%s] in %s (signature %s), first at launch %ld",
                    keys[i].count, keys[i].gate, keys[i].kernel_name, keys[i].sig,
                    keys[i].first_launch);
  if (suppressed)
    kc_log_printf(KC_LOG_WARN, "%ld violation%s suppressed (suppressions=%s)", suppressed,
                  suppressed == 1 ? "" : "s", kc_opt.suppressions);
  if (locked) pthread_mutex_unlock(&lock);
  return nbugs;
}

void kc_findings_reset_child(void) {
  pthread_mutex_init(&lock, NULL);
  /* The parent's queue and worker: the child reports its own. */
  pthread_mutex_init(&q_lock, NULL);
  pthread_cond_init(&q_wake, NULL);
  pthread_cond_init(&q_idle, NULL);
  q_head = q_tail = NULL;
  q_busy = 0;
  worker_state = 0;
  forked_child = 1;
  atomic_store(&outstanding, 0);
  nkeys = 0;
  kc_bugs_reset_child();
  printed = suppressed = unique = repeats = 0;
}
