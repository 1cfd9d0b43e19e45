/* libkcheck/base/symbolize.h — host frames symbolised to file:line (libdw). */
#ifndef KC_SYMBOLIZE_H
#define KC_SYMBOLIZE_H

#include <elfutils/libdwfl.h>
#include <jansson.h>

/* A libdw session over every module mapped in this process now (debug
 * files looked up on this machine only), for symbolising and for
 * unwinding (stack_snap.c); NULL on failure. dwfl_end it. */
Dwfl *kc_process_dwfl(void);

/* A new array: the frames of host (stack.c's {module, offset, symbol, ip})
 * without kcheck's own, each with file and line where the module has
 * DWARF line information. */
json_t *kc_symbolize_host(json_t *host);
/* kc_symbolize_host on the "host" array of each of stacks (objects;
 * NULL or hostless ones are left alone), in place, with one session. */
void kc_symbolize_stacks(json_t *const *stacks, int n);
/* Is module (a path from dladdr) libkcheck.so itself? */
int kc_frame_is_own(const char *module);

#endif
