/* libkcheck/base/cubin_vars.h — module-scope variables of a cubin (ELF). */
#ifndef KC_CUBIN_VARS_H
#define KC_CUBIN_VARS_H

#include <stddef.h>
#include <stdint.h>

/* The names of the __device__ and __constant__ variables elf[0..len)
 * defines, up to max into names; how many, or -1 when the ELF cannot be
 * read or holds more than max. */
int kc_cubin_vars(const void *elf, size_t len, char (*names)[128], int max);

#endif
