/* libkcheck/base/sass_atomics.h — the order-dependent atomics of a kernel
 * read from its SASS (a cubin's .text.<kernel>), for kernels with no PTX:
 * the nondeterminism gate's classification (struct kc_ptx_atomics, ptx.h)
 * for Triton, ATen and cuBLAS kernels. */
#ifndef KC_SASS_ATOMICS_H
#define KC_SASS_ATOMICS_H

#include <stddef.h>

#include "ptx.h"

/* Scans kernel's code in the cubin elf[0..len) (sm_80 to sm_120). Float
 * additions (RED/ATOMG/ATOM of an F32/F64/F16x2/BF16x2 type) are
 * float_adds; integer RED (no value returned) other_atomics. Atomics that
 * return a value (ATOMG, ATOM, ATOMS, CAS) may be worklist slots, which
 * SASS does not tell: they are counted in *returning. first: the first
 * float addition. 0, or -1 when the kernel's code is not in the ELF or the
 * architecture is not one whose encodings are known (*why). */
int kc_sass_atomics(const void *elf, size_t len, const char *kernel, struct kc_ptx_atomics *a,
                    int *returning, const char **why);

#endif
