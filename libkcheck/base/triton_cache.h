/* libkcheck/base/triton_cache.h — the PTX of a Triton kernel, from the cache
 * where Triton keeps every stage of what it compiled, for a cubin whose
 * image carries none (ptx_source.h's route then applies unchanged). */
#ifndef KC_TRITON_CACHE_H
#define KC_TRITON_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* Triton's cache folder as Triton picks it (TRITON_CACHE_DIR, else
 * $TRITON_HOME or $HOME followed by /.triton/cache), read now: Inductor
 * sets TRITON_CACHE_DIR while the program runs. 0, or -1 when none. */
int kc_triton_cache_dir(char *out, size_t out_len);
/* The PTX beside <entry>/<kernel>.cubin of the cache entry whose cubin is
 * `size` bytes hashing to `hash` (XXH3-64): malloc'd, NUL-terminated, *len
 * its length, and its path in from (may be NULL). NULL with *why when no
 * entry matches. Bounded: at most 16384 entries, one stat each; a file is
 * read only when its size matches; cubins over 64 MiB and PTX files over
 * 256 MiB are not read. */
char *kc_triton_ptx(const char *kernel, uint64_t hash, size_t size, char *from, size_t from_len,
                    size_t *len, const char **why);

#endif
