/* libkcheck/findings/audit.h — the opt-in CUPTI coverage audit: CUPTI's driver-API
 * callbacks count launches independently of the shim, and the two counts
 * are matched launch by launch on the launching thread. */
#ifndef KC_AUDIT_H
#define KC_AUDIT_H

extern int kc_audit_active;

/* Loads CUPTI at run time and subscribes; logs why when it cannot. */
void kc_audit_start(void);
/* Around the application's real launch call (only when active). */
void kc_audit_expect_begin(void);
void kc_audit_expect_end(void);
/* Writes the `audit` record and the summary line; unsubscribes. */
void kc_audit_finish(void);

#endif
