/* libkcheck/base/ptx_source.h — the PTX a loaded code image carries, for the
 * intra-block perturbation (ptx_rewrite.h) and the classification of
 * atomics (ptx_scan.h). nvcc fatbins carry PTX next to SASS (CUDA 13
 * compresses it with zstd, older toolkits with LZ4); a module loaded from
 * PTX text is its own PTX; cubins (Triton) and vendor libraries (cuBLAS,
 * cuDNN, most of PyTorch's kernels for sm_90) carry none. */
#ifndef KC_PTX_SOURCE_H
#define KC_PTX_SOURCE_H

#include <stddef.h>

/* The PTX of an in-memory image (fatbin wrapper, fatbin, or PTX text) for a
 * device of compute capability cc (major * 10 + minor): the entry of the
 * highest virtual architecture <= cc. Returns a malloc'd NUL-terminated
 * text (*len its length), or NULL with *why saying why there is none.
 * Never reads more than the image's headers declare. */
char *kc_ptx_from_image(const void *image, int cc, size_t *len, const char **why);

/* The cubin (ELF) of an image for a device of compute capability cc, for
 * the Sanitizer route (libkcheck/exec/san_route.c): image is size bytes
 * of a fatbin (not its wrapper) or an ELF. A malloc'd copy (*len bytes),
 * inflated where compressed, or NULL with *why. */
char *kc_cubin_from_image(const void *image, size_t size, int cc, size_t *len, const char **why);

#endif
