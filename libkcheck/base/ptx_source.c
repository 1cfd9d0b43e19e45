/* libkcheck/base/ptx_source.c — PTX out of code images. The fatbin layout (a
 * header, then entries of kind 1 = PTX, 2 = ELF, each with its own header)
 * is not documented by NVIDIA; the fields read here were checked against
 * nvcc 13.0's output (test/unit/data/). Compressed entries are inflated
 * with libzstd or liblz4, opened with dlopen on first need: kcheck never
 * depends on them, and without them a compressed PTX entry is "no PTX". */
#include "ptx_source.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define WRAPPER_MAGIC 0x466243b1u
#define FATBIN_MAGIC 0xBA55ED50u
#define KIND_PTX 1
#define KIND_ELF 2
#define FLAG_LZ4 0x2000u
#define FLAG_ZSTD 0x8000u
/* A PTX entry larger than this is not inflated (a corrupt header must not
 * make kcheck allocate gigabytes). */
#define MAX_PTX (256u << 20)

/* The entry header (little-endian, as nvcc 13.0 writes it). */
struct entry {
  uint16_t kind, version;
  uint32_t header_size;
  uint64_t payload_size; /* padded */
  uint32_t compressed_size;
  uint32_t unknown0;
  uint16_t ptx_minor, ptx_major;
  uint32_t arch; /* e.g. 90 */
  uint32_t name_offset, name_len;
  uint64_t flags;
  uint64_t zero;
  uint64_t uncompressed_size;
};

static pthread_once_t libs_once = PTHREAD_ONCE_INIT;
static size_t (*zstd_decompress)(void *, size_t, const void *, size_t);
static unsigned (*zstd_is_error)(size_t);
static int (*lz4_decompress)(const char *, char *, int, int);

static void open_libs(void) {
  void *z = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
  if (z) {
    *(void **)&zstd_decompress = dlsym(z, "ZSTD_decompress");
    *(void **)&zstd_is_error = dlsym(z, "ZSTD_isError");
  }
  void *l = dlopen("liblz4.so.1", RTLD_NOW | RTLD_LOCAL);
  if (l) *(void **)&lz4_decompress = dlsym(l, "LZ4_decompress_safe");
}

static char *inflate(const struct entry *e, const unsigned char *payload, size_t *len,
                     const char **why) {
  size_t csize = e->compressed_size ? e->compressed_size : e->payload_size;
  if (csize > e->payload_size) csize = (size_t)e->payload_size;
  int zstd = (e->flags & FLAG_ZSTD) != 0, lz4 = (e->flags & FLAG_LZ4) != 0;
  size_t out_size = (zstd || lz4) ? (size_t)e->uncompressed_size : csize;
  if (!out_size || out_size > MAX_PTX) {
    *why = "the image's PTX entry has an implausible size";
    return NULL;
  }
  char *out = malloc(out_size + 1);
  if (!out) {
    *why = "out of host memory";
    return NULL;
  }
  if (zstd || lz4) {
    pthread_once(&libs_once, open_libs);
    int ok = 0;
    if (zstd && zstd_decompress && zstd_is_error) {
      size_t n = zstd_decompress(out, out_size, payload, csize);
      ok = !zstd_is_error(n) && n <= out_size;
      out_size = ok ? n : 0;
    } else if (lz4 && lz4_decompress && csize < (1u << 31)) {
      int n = lz4_decompress((const char *)payload, out, (int)csize, (int)out_size);
      ok = n >= 0;
      out_size = ok ? (size_t)n : 0;
    } else {
      free(out);
      *why = zstd ? "the image's PTX is zstd-compressed and libzstd.so.1 is unavailable"
                  : "the image's PTX is LZ4-compressed and liblz4.so.1 is unavailable";
      return NULL;
    }
    if (!ok) {
      free(out);
      *why = "inflating the image's PTX failed";
      return NULL;
    }
  } else {
    memcpy(out, payload, out_size);
  }
  out[out_size] = 0;
  *len = out_size;
  return out;
}

static char *from_fatbin(const unsigned char *p, int cc, size_t *len, const char **why) {
  uint16_t hsize;
  uint64_t fsize;
  memcpy(&hsize, p + 6, 2);
  memcpy(&fsize, p + 8, 8);
  const unsigned char *at = p + hsize, *end = at + fsize;
  const unsigned char *best = NULL;
  struct entry be;
  int seen_ptx = 0;
  memset(&be, 0, sizeof be);
  while (at + sizeof(struct entry) <= end) {
    struct entry e;
    memcpy(&e, at, sizeof e);
    if (e.header_size < sizeof e || e.payload_size > (uint64_t)(end - at)) break;
    if (e.kind == KIND_PTX) {
      seen_ptx = 1;
      if ((int)e.arch <= cc && (!best || e.arch > be.arch)) best = at, be = e;
    }
    at += e.header_size + e.payload_size;
  }
  if (!best) {
    *why = seen_ptx ? "the image's PTX is for a newer architecture than the device"
                    : "the image carries no PTX (SASS only)";
    return NULL;
  }
  char *ptx = inflate(&be, best + be.header_size, len, why);
  if (ptx) *len = strlen(ptx); /* entries are padded with NULs */
  return ptx;
}

/* The SASS entry (an ELF) for exactly architecture cc: a cubin runs only
 * on its own architecture's major version, and the copy must be what the
 * driver would have picked for the application. */
static char *elf_from_fatbin(const unsigned char *p, int cc, size_t *len, const char **why) {
  uint16_t hsize;
  uint64_t fsize;
  memcpy(&hsize, p + 6, 2);
  memcpy(&fsize, p + 8, 8);
  const unsigned char *at = p + hsize, *end = at + fsize;
  while (at + sizeof(struct entry) <= end) {
    struct entry e;
    memcpy(&e, at, sizeof e);
    if (e.header_size < sizeof e || e.payload_size > (uint64_t)(end - at)) break;
    if (e.kind == KIND_ELF && (int)e.arch == cc) return inflate(&e, at + e.header_size, len, why);
    at += e.header_size + e.payload_size;
  }
  *why = "the image has no SASS for the device's architecture (its PTX is JIT-compiled)";
  return NULL;
}

char *kc_cubin_from_image(const void *image, size_t size, int cc, size_t *len, const char **why) {
  const unsigned char *p = image;
  uint32_t magic;
  if (!p || size < 16) {
    *why = "the image's bytes are unavailable";
    return NULL;
  }
  memcpy(&magic, p, 4);
  if (magic == FATBIN_MAGIC) return elf_from_fatbin(p, cc, len, why);
  if (p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F') {
    char *out = malloc(size);
    if (!out) {
      *why = "out of host memory";
      return NULL;
    }
    memcpy(out, p, size);
    *len = size;
    return out;
  }
  *why = "the image is neither a fatbin nor a cubin";
  return NULL;
}

char *kc_ptx_from_image(const void *image, int cc, size_t *len, const char **why) {
  const unsigned char *p = image;
  if (!p) {
    *why = "the image was loaded from a file";
    return NULL;
  }
  uint32_t magic;
  memcpy(&magic, p, 4);
  if (magic == WRAPPER_MAGIC) {
    /* struct { int magic; int version; const void *data; void *filename; } */
    const void *data;
    memcpy(&data, p + 8, sizeof data);
    if (data) return kc_ptx_from_image(data, cc, len, why);
    *why = "the fatbin wrapper points to no fatbin";
    return NULL;
  }
  if (magic == FATBIN_MAGIC) return from_fatbin(p, cc, len, why);
  if (p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F') {
    *why = "the image is a cubin (SASS only)";
    return NULL;
  }
  /* PTX text: it declares a .version. */
  size_t n = strnlen((const char *)p, MAX_PTX);
  if (n == MAX_PTX || !memmem(p, n, ".version", 8)) {
    *why = "the image is neither a fatbin, a cubin nor PTX";
    return NULL;
  }
  char *out = malloc(n + 1);
  if (!out) {
    *why = "out of host memory";
    return NULL;
  }
  memcpy(out, p, n + 1);
  *len = n;
  return out;
}
