/* libkcheck/findings/report.h — the JSONL report: one file per process, one record
 * per line. Records are copied to an in-memory ring and written by a
 * background thread (report_buf.h); a fatal signal writes what is pending,
 * so a crash loses no completed record. Records are built with jansson,
 * launch records (trace=1) by hand. */
#ifndef KC_REPORT_H
#define KC_REPORT_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdint.h>

#define KC_REPORT_SCHEMA "kcheck.report/2"

/* Counters for the summary. */
struct kc_counters {
  atomic_long launches;               /* application kernel launches seen */
  atomic_long launches_by_entry[4];   /* by enum kc_launch_entry */
  atomic_long graph_launches;         /* cuGraphLaunch (not into a capture) */
  atomic_long graphs;                 /* executable graphs instantiated */
  atomic_long graph_replays;          /* graph launches replayed node by node */
  atomic_long graph_kernel_launches;  /* kernel nodes run by graph launches */
  atomic_long graph_kernels_replayed; /* of those, run one by one in a replay */
  atomic_long graph_kernel_checks;    /* of those, checked */
  atomic_long captured_launches;      /* launches (and graph launches) recorded by a capture */
  atomic_long kernels;                /* distinct kernels */
  atomic_long checks;
  atomic_long violations;
  atomic_long skips;
  atomic_long modules;
  atomic_long allocations;
  atomic_long restore_checks;   /* restore_check=1: checks whose memory was compared after */
  atomic_long restore_differed; /* of those, where it differed from post-state A */
};
extern struct kc_counters kc_count;

/* Opens the report (log_path option) and writes the run record, then the
 * `test` records of tests named before it was open. */
int kc_report_open(void);
/* A `test` record for the test id (kcheck_set_test); before the report is
 * open (kcheck activates at the first CUDA call, and a test suite names
 * tests from the start) it is kept and written when the report opens. */
void kc_report_test(const char *id);
/* After fork: a new file for the child, with the parent's pid noted. */
void kc_report_reopen_child(long parent_pid);
/* Writes one record: `type` is added as the first key; takes ownership of rec. */
void kc_report_emit(const char *type, json_t *rec);
/* The same for a record already serialised: body is one JSON object ("{...}",
 * n bytes, no newline) whose members follow type, seq and t. */
void kc_report_emit_raw(const char *type, const char *body, size_t n);
/* Waits until every record emitted so far is in the file. 0 on success. */
int kc_report_flush(void);
/* The path being written, or NULL. */
const char *kc_report_path(void);
/* The writer of the summary's own_kernels object (kcheck's own kernels:
 * exec/perturb.c), registered by the core; none: the key is left out. */
void kc_report_set_own_kernels(json_t *(*fn)(void));
/* Writes the summary record and the stderr summary; idempotent. */
void kc_report_finish(void);
/* The same from a SIGTERM/SIGINT handler (signals.c): locks are tried for a
 * bounded time, since the signal may have interrupted their holder. */
void kc_report_finish_signal(int sig);
/* Locks m; while finishing from a signal, tries for 0.2 s and returns 0
 * (not locked) rather than deadlock. 1: locked. */
#include <pthread.h>
int kc_lock_for_exit(pthread_mutex_t *m);
/* JSON strings for 64-bit values: addresses as "0x...", hashes and
 * signatures as 16 hex digits. */
json_t *kc_json_addr(uint64_t v);
json_t *kc_json_hash(uint64_t v);
/* Seconds since kcheck started (monotonic). */
double kc_now_s(void);
/* Lock order helpers for fork. */
void kc_report_lock(void);
void kc_report_unlock(void);
void kc_report_reset_lock(void);

#endif
