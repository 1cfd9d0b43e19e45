/* libkcheck/base/file_hash.h — a file's XXH3-64 hash and size, read in
 * 64 KiB blocks: how kcheck names an image loaded from a file (capture/)
 * and matches a cubin to Triton's cache (triton_cache.c). */
#ifndef KC_FILE_HASH_H
#define KC_FILE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* 0 with *hash and *size set; -1 when the file cannot be read. */
int kc_file_hash(const char *path, uint64_t *hash, size_t *size);

#endif
