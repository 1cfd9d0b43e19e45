/* libkcheck/stack.h — host stacks (libunwind) and Python stacks (CPython's
 * C API looked up at run time, never linked) for records that ask. */
#ifndef KC_STACK_H
#define KC_STACK_H

#include <jansson.h>

/* {"host": [{"module","offset","symbol"}...], "python": [{"file","line","function"}...]}
 * skip: innermost frames to drop (kcheck's own). */
json_t *kc_stack_json(int skip);
/* The same with the host frames unnamed ("symbol": ""): module and offset
 * only, microseconds instead of milliseconds a frame (trace=2). */
json_t *kc_stack_json_fast(int skip);

#endif
