/* libkcheck/findings/stack.h — host stacks (libunwind) and Python stacks (CPython's
 * C API looked up at run time, never linked) for records that ask. */
#ifndef KC_STACK_H
#define KC_STACK_H

#include <jansson.h>
#include <stdint.h>

/* {"host": [{"module","offset","symbol"}...], "python": [{"file","line","function"}...]}
 * skip: innermost frames to drop (kcheck's own). */
json_t *kc_stack_json(int skip);
/* The same with the host frames unnamed ("symbol": ""): module and offset
 * only, microseconds instead of milliseconds a frame (trace=2). */
json_t *kc_stack_json_fast(int skip);
struct kc_stack_snap;
/* For a finding: the Python frames now and the host frames as a snapshot
 * (*snap, stack_snap.h) for kc_stack_snap_host to unwind later, off this
 * thread; where no snapshot can be taken (*snap NULL), kc_stack_json_fast. */
json_t *kc_stack_json_deferred(int skip, struct kc_stack_snap **snap);
/* The host frames of snap as kc_stack_json_fast gives them (module, offset,
 * "symbol": "", ip), kcheck's own included; NULL when it cannot be
 * unwound. */
json_t *kc_stack_snap_host(const struct kc_stack_snap *snap);
/* kc_stack_json_fast for an operation stream_races tracks (every launch and
 * copy): the stack of an earlier operation with the same salt (its name and
 * stream) and the same Python frames (code object and line of each) is
 * reused, marked "reused": true. Walking the Python frames costs about a
 * microsecond, unwinding the host frames tens to hundreds in a large
 * process. A stack without Python frames (a C++ thread, python_stack=0) is
 * keyed on its native return addresses instead. The caller must not change
 * what it returns (copy it first), and takes and drops further references
 * with kc_stack_ref and kc_stack_unref. */
json_t *kc_stack_json_reused(int skip, uint64_t salt);
/* A copy of stack without kcheck's own host frames (for evidence, which is
 * not symbolised). */
json_t *kc_stack_copy_without_own(json_t *stack);
/* A reference to a stack of kc_stack_json_reused taken and dropped: such
 * stacks are shared between threads (every thread's tracked operations),
 * and jansson's json_incref and json_decref read the count plainly before
 * changing it atomically, a race ThreadSanitizer reports; these do both
 * under one lock. NULL is ignored. */
json_t *kc_stack_ref(json_t *stack);
void kc_stack_unref(json_t *stack);

#endif
