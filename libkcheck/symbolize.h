/* libkcheck/symbolize.h — host frames symbolised to file:line (libdw). */
#ifndef KC_SYMBOLIZE_H
#define KC_SYMBOLIZE_H

#include <jansson.h>

/* A new array: the frames of host (stack.c's {module, offset, symbol, ip})
 * without kcheck's own, each with file and line where the module has
 * DWARF line information. */
json_t *kc_symbolize_host(json_t *host);
/* Is module (a path from dladdr) libkcheck.so itself? */
int kc_frame_is_own(const char *module);

#endif
