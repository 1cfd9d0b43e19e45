/* libkcheck/findings/bug.h — one finding per bug. Violations are grouped by
 * their code sites, not by the operation: a missing stream wait between
 * the same two lines of a serving loop races on every request's buffers,
 * with other sizes and kernels each time, and is still one bug. A site is
 * the innermost Python frame of the user's code ("file:line"), else the
 * first host frames outside kcheck and the interpreter. Two-sided gates
 * (stream_order: the two operations; stream_delay: the delayed write and
 * the launch re-run) have two sites; the others have the launch's site and
 * the kernel. A bug is keyed by the gate's family (stream_delay is
 * stream_order's, determinism race's) and its sites: the gates that see one
 * bug from two sides make one finding. Callers hold the findings lock
 * (finding.c). */
#ifndef KC_BUG_H
#define KC_BUG_H

#include <jansson.h>
#include <stddef.h>

/* Sets rec's "bug" (a hex key) and "sites" (their labels) from its
 * symbolised stacks and returns how many times the bug has now been seen
 * (1: new). Suppressed occurrences are counted apart. *index: the bug's
 * slot for kc_bug_repeat (-1 when the table is full). */
long kc_bug_note(json_t *rec, int suppressed, int *index);
/* n more occurrences of the bug in slot index (repeats without a record). */
void kc_bug_repeat(int index, long n);
/* The innermost frame of python (an array) outside kcheck's and the
 * frameworks' code, else its first; NULL when empty. */
json_t *kc_user_frame(json_t *python);
/* A stack's site as kc_bug_note labels it ("no frames" without one). */
void kc_site_label(json_t *stack, char *out, size_t n);
/* summary "bugs" [{bug, gate, kernel_name, sites, occurrences,
 * first_launch}] and "unique_bugs". */
void kc_bugs_summary(json_t *summary);
/* One stderr line per bug with its occurrences; the number of bugs. */
long kc_bugs_print_summary(void);
void kc_bugs_reset_child(void);

#endif
