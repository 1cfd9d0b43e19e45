/* libkcheck/base/triton_cache.c — the PTX Triton kept for a cubin it loads.
 * Triton loads cubins (no PTX in the image) but writes every stage of each
 * kernel it compiles into its cache: <cache>/<key>/<name>.cubin beside
 * <name>.ptx (triton/runtime/cache.py, FileCacheManager; the cache is
 * TRITON_CACHE_DIR, else $TRITON_HOME/.triton/cache, else
 * $HOME/.triton/cache; Inductor points TRITON_CACHE_DIR at its own folder).
 * A cubin is matched by content: same size, same XXH3-64 as the bytes the
 * driver was given, so a stale entry of another compile never matches. */
#include "triton_cache.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "file_hash.h"

/* Bounds: a cache of many compiles must not make a check read it all. */
#define MAX_ENTRIES 16384         /* cache entries (folders) looked at */
#define MAX_CUBIN (64u << 20)     /* a cubin larger than this is not hashed */
#define MAX_PTX_FILE (256u << 20) /* nor a PTX file read */

int kc_triton_cache_dir(char *out, size_t out_len) {
  const char *d = getenv("TRITON_CACHE_DIR");
  if (d && *d) return snprintf(out, out_len, "%s", d) >= (int)out_len ? -1 : 0;
  const char *home = getenv("TRITON_HOME");
  if (!home || !*home) home = getenv("HOME");
  if (!home || !*home) return -1;
  return snprintf(out, out_len, "%s/.triton/cache", home) >= (int)out_len ? -1 : 0;
}

/* 1 when the file at path is `size` bytes hashing to `hash`, 0 when not,
 * -1 when it cannot be read. */
static int same_bytes(const char *path, uint64_t hash, size_t size) {
  uint64_t h;
  size_t n;
  if (kc_file_hash(path, &h, &n)) return -1;
  return n == size && h == hash;
}

static char *read_text(const char *path, size_t *len) {
  struct stat sb;
  if (stat(path, &sb) || !S_ISREG(sb.st_mode) || sb.st_size <= 0 ||
      (unsigned long long)sb.st_size > MAX_PTX_FILE)
    return NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t want = (size_t)sb.st_size;
  char *out = malloc(want + 1);
  size_t got = out ? fread(out, 1, want, f) : 0;
  fclose(f);
  if (!out || got != want) {
    free(out);
    return NULL;
  }
  out[got] = 0;
  *len = strlen(out);
  return out;
}

char *kc_triton_ptx(const char *kernel, uint64_t hash, size_t size, char *from, size_t from_len,
                    size_t *len, const char **why) {
  char dir[PATH_MAX];
  if (!kernel || !*kernel || strchr(kernel, '/') || kc_triton_cache_dir(dir, sizeof dir)) {
    *why = "no Triton cache folder (TRITON_CACHE_DIR, TRITON_HOME, HOME)";
    return NULL;
  }
  if (!size || size > MAX_CUBIN) {
    *why = "the cubin's size is beyond what is matched against Triton's cache";
    return NULL;
  }
  DIR *d = opendir(dir);
  if (!d) {
    *why = "no Triton cache entry holds this cubin (no cache folder)";
    return NULL;
  }
  char *ptx = NULL;
  int entries = 0;
  *why = "no Triton cache entry holds this cubin";
  for (struct dirent *e; !ptx && (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    if (++entries > MAX_ENTRIES) {
      *why = "no Triton cache entry holds this cubin (the first 16384 entries searched)";
      break;
    }
    /* Triton names each stage after the kernel: one stat per entry. */
    char path[PATH_MAX];
    struct stat sb;
    int n = snprintf(path, sizeof path, "%s/%s/%s.cubin", dir, e->d_name, kernel);
    if (n < 0 || n >= (int)sizeof path || stat(path, &sb) || !S_ISREG(sb.st_mode) ||
        (unsigned long long)sb.st_size != size || same_bytes(path, hash, size) != 1)
      continue;
    strcpy(path + n - strlen("cubin"), "ptx"); /* shorter: fits */
    ptx = read_text(path, len);
    if (!ptx) {
      *why = "the Triton cache entry of this cubin has no readable PTX";
      continue;
    }
    if (from) snprintf(from, from_len, "%s", path);
  }
  closedir(d);
  return ptx;
}
