/* libkcheck/base/suppress.h — suppressions=FILE: lines `gate:kernel-glob[:frame-glob]`
 * ('#' comments; a ':' inside a C++ "::" is part of the name). Globs are
 * fnmatch(3) patterns; one without wildcards matches as a substring, as in
 * the kernel_* options. The kernel glob is tried on the demangled and the
 * mangled name, the frame glob on every frame of the stack (Python file and
 * function, host symbol, module and file). */
#ifndef KC_SUPPRESS_H
#define KC_SUPPRESS_H

#include <jansson.h>

/* Loads the ','-separated files; returns the number of problems (each printed). */
int kc_suppress_load(const char *path);
/* FILE:LINE of the first rule matching the violation record, or NULL. */
const char *kc_suppress_match(json_t *rec);
int kc_suppress_count(void);

#endif
