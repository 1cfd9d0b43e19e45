/* libkcheck/base/file_hash.c — a file's XXH3-64 hash and size. */
#include "file_hash.h"

#include <stdio.h>

#define XXH_INLINE_ALL /* header-only, as elsewhere in kcheck */
#include <xxhash.h>

int kc_file_hash(const char *path, uint64_t *hash, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  XXH3_state_t *st = XXH3_createState();
  if (!st) {
    fclose(f);
    return -1;
  }
  XXH3_64bits_reset(st);
  unsigned char buf[65536];
  size_t n, total = 0;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
    XXH3_64bits_update(st, buf, n);
    total += n;
  }
  *hash = XXH3_64bits_digest(st);
  *size = total;
  XXH3_freeState(st);
  fclose(f);
  return 0;
}
