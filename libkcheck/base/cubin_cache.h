/* libkcheck/base/cubin_cache.h — the device's cubin of the images read
 * last, kept for the next kernel of the same image. A SASS-only kernel's
 * first check reads its image's cubin (the nondeterminism gate's atomics,
 * the Sanitizer route's copy); the first checks of a program's kernels read
 * the same few images again and again, and inflating one of ATen's
 * compressed fatbins took 15-22 ms per kernel (measured on an H100: 236 of
 * the 344 ms a GPT step's first checks cost). */
#ifndef KC_CUBIN_CACHE_H
#define KC_CUBIN_CACHE_H

#include <stddef.h>

/* Entries and bytes held at most; a cubin larger than the bytes is not
 * kept. */
enum { KC_CUBIN_CACHE_ENTRIES = 8, KC_CUBIN_CACHE_BYTES = 64 << 20 };

/* A malloc'd copy of the cubin kept for image `image` (kcheck's image id)
 * and architecture cc, its size in *len; NULL when none is kept or out of
 * memory. */
char *kc_cubin_cache_get(int image, int cc, size_t *len);
/* Keeps a copy of elf[0..len) for (image, cc), dropping the least recently
 * used entries to make room. */
void kc_cubin_cache_put(int image, int cc, const char *elf, size_t len);
/* Lookups that found a cubin, and those that did not. */
void kc_cubin_cache_counts(long *hits, long *misses);
/* Frees every entry (tests; the process's end). */
void kc_cubin_cache_clear(void);

#endif
