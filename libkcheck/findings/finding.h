/* libkcheck/findings/finding.h — the single place a violation goes through after a
 * gate described it: test attribution, host frames to file:line,
 * suppressions, de-duplication by (gate, kernel, signature) with a count,
 * print_limit, the report record and the finding block on stderr. */
#ifndef KC_FINDING_H
#define KC_FINDING_H

#include <jansson.h>

/* Reads KCHECK_TEST and loads suppressions=FILE; returns the problems. */
int kc_findings_init(void);
/* Takes ownership of rec (a violation record). Returns 1 when it counts
 * as a violation, 0 when a suppression matched (written as a `suppressed`
 * record). The stack and test id are taken at once; the rest may follow
 * on kcheck's findings thread (then 1: a suppression is only known
 * there); halt_on_error and a forked child report at once. A process
 * that ends with _exit while its findings thread is still naming frames
 * loses those findings. */
int kc_finding_report(json_t *rec);
/* Reports every finding still queued, before the summary; in_signal (a
 * fatal signal): writes them as they are, without waiting. */
void kc_findings_drain(int in_signal);
/* The test the process is running now (pytest plugin, KCHECK_TEST); ""
 * or NULL: none. Every later violation record carries it as "test". */
void kc_finding_set_test(const char *id);
/* Later checks' violations of a (gate, kernel, signature) already
 * reported (gates/findings.c writes no record for them): counted for the
 * summary, as suppressed when the first one was. */
void kc_finding_repeat(const char *gate, long kernel, const char *kernel_name,
                       unsigned long long signature, int n);
/* Adds unique_violations, suppressed, repeats and the bugs (bug.h) to the
 * summary record. */
void kc_findings_summary(json_t *summary);
/* The stderr summary's lines for bugs, repeated and suppressed findings;
 * returns the number of bugs (for the SUMMARY line). */
long kc_findings_print_summary(void);
/* After fork: the child counts its own findings. */
void kc_findings_reset_child(void);

#endif
