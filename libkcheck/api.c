/* libkcheck/api.c — the exported public API of include/kcheck.h. */
#include "../include/kcheck.h"

#include <stdio.h>

#include "options.h"
#include "version.h"

#define KC_EXPORT __attribute__((visibility("default")))

KC_EXPORT const char *kcheck_version(void) { return KCHECK_VERSION; }

KC_EXPORT void kcheck_print_options(void) { kc_options_print_help(stderr); }
