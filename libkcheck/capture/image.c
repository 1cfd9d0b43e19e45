/* libkcheck/capture/image.c — code-image registry. The driver's load calls take a
 * bare pointer, so the image size comes from its own header. */
#include "image.h"

#include <elf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "driver.h"
#include "file_hash.h"
#include "log.h"
#include "ptx_source.h"
#include "report.h"
#include "triton_cache.h"

struct image_rec {
  void *handle;
  struct kc_image_info info;
  /* The PTX the intra-block strategies rewrite, copied at load (the
   * application may free an image it loaded from memory); NULL with
   * no_ptx saying why. */
  char *ptx;
  size_t ptx_len;
  const char *no_ptx;
  /* A cubin: Triton's cache was searched for its PTX (once per image). */
  int triton_tried;
  char triton_why[160];
  UT_hash_handle hh;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct image_rec *by_handle;
static int next_id;

#define FATBIN_WRAPPER_MAGIC 0x466243b1u
#define FATBIN_MAGIC 0xBA55ED50u

/* Images larger than this are hashed by their first bytes only: a corrupt
 * header must not make kcheck read gigabytes. */
#define MAX_IMAGE (1ull << 31)

const void *kc_image_extent(const void *image, size_t *size, const char **format) {
  const unsigned char *p = image;
  uint32_t magic;
  memcpy(&magic, p, 4);
  if (magic == FATBIN_WRAPPER_MAGIC) {
    /* struct { int magic; int version; const void *data; void *filename; } */
    const void *data;
    memcpy(&data, p + 8, sizeof data);
    if (!data) return NULL;
    return kc_image_extent(data, size, format);
  }
  if (magic == FATBIN_MAGIC) {
    /* u32 magic, u16 version, u16 header size, u64 payload size */
    uint16_t hsize;
    uint64_t fsize;
    memcpy(&hsize, p + 6, 2);
    memcpy(&fsize, p + 8, 8);
    *size = (size_t)hsize + fsize;
    *format = "fatbin";
  } else if (!memcmp(p, ELFMAG, SELFMAG) && p[EI_CLASS] == ELFCLASS64) {
    Elf64_Ehdr eh;
    memcpy(&eh, p, sizeof eh);
    uint64_t end = eh.e_shoff + (uint64_t)eh.e_shnum * eh.e_shentsize;
    uint64_t pend = eh.e_phoff + (uint64_t)eh.e_phnum * eh.e_phentsize;
    *size = (size_t)(end > pend ? end : pend);
    *format = "elf";
  } else {
    *size = strlen((const char *)p) + 1;
    *format = "ptx";
  }
  if (*size > MAX_IMAGE) *size = MAX_IMAGE;
  return image;
}

/* The compute capability of the current context's device (major * 10 +
 * minor); 1000 when unknown (then the newest PTX is kept). */
static int current_cc(void) {
  CUdevice dev;
  int major = 0, minor = 0;
  if (!kc_drv.cuCtxGetDevice || !kc_drv.cuDeviceGetAttribute ||
      kc_drv.cuCtxGetDevice(&dev) != CUDA_SUCCESS ||
      kc_drv.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) !=
          CUDA_SUCCESS ||
      kc_drv.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) !=
          CUDA_SUCCESS)
    return 1000;
  return major * 10 + minor;
}

static void free_rec(struct image_rec *r) {
  if (!r) return;
  free(r->ptx);
  free(r);
}

void kc_image_loaded(void *handle, int is_library, const void *image, const char *path) {
  struct image_rec *r = calloc(1, sizeof *r);
  if (!r) {
    KC_INTERNAL_ERROR("out of memory recording a module load");
    return;
  }
  r->no_ptx = "the image was loaded from a file";
  if (!path && image) r->ptx = kc_ptx_from_image(image, current_cc(), &r->ptx_len, &r->no_ptx);
  r->handle = handle;
  r->info.is_library = is_library;
  if (path) {
    snprintf(r->info.source, sizeof r->info.source, "%s", path);
    snprintf(r->info.format, sizeof r->info.format, "file");
    if (kc_file_hash(path, &r->info.hash, &r->info.size)) r->info.size = 0;
  } else if (image) {
    const char *fmt = "?";
    size_t size = 0;
    const void *bytes = kc_image_extent(image, &size, &fmt);
    snprintf(r->info.source, sizeof r->info.source, "memory");
    snprintf(r->info.format, sizeof r->info.format, "%s", fmt);
    if (bytes) {
      r->info.bytes = bytes;
      r->info.size = size;
      r->info.hash = XXH3_64bits(bytes, size);
    }
  }
  pthread_mutex_lock(&lock);
  r->info.id = next_id++;
  struct image_rec *old = NULL;
  HASH_REPLACE_PTR(by_handle, handle, r, old);
  pthread_mutex_unlock(&lock);
  free_rec(old);
  atomic_fetch_add(&kc_count.modules, 1);
  kc_report_emit("image", json_pack("{s:i, s:s, s:s, s:o, s:I, s:s}", "id", r->info.id, "kind",
                                    is_library ? "library" : "module", "format", r->info.format,
                                    "hash", kc_json_hash(r->info.hash), "size",
                                    (json_int_t)r->info.size, "source", r->info.source));
}

void kc_image_unloaded(void *handle) {
  struct image_rec *r = NULL;
  pthread_mutex_lock(&lock);
  HASH_FIND_PTR(by_handle, &handle, r);
  if (r) HASH_DEL(by_handle, r);
  pthread_mutex_unlock(&lock);
  free_rec(r);
}

/* A cubin loaded from memory (Triton's way) has no PTX in its image, but
 * Triton may have kept it: looked up at the first ask (the search reads
 * the file system, never on the launch path), outside the lock, by the
 * hash taken at load (the application may have freed the bytes since). */
static void triton_lookup(void *handle, const char *kernel) {
  struct image_rec *r = NULL;
  struct kc_image_info info;
  pthread_mutex_lock(&lock);
  HASH_FIND_PTR(by_handle, &handle, r);
  int ask = r && !r->ptx && !r->triton_tried && !strcmp(r->info.format, "elf") && r->info.size;
  if (ask) {
    r->triton_tried = 1;
    info = r->info;
  }
  pthread_mutex_unlock(&lock);
  if (!ask) return;
  char from[4096] = "";
  const char *why = NULL;
  size_t len = 0;
  char *ptx = kc_triton_ptx(kernel, info.hash, info.size, from, sizeof from, &len, &why);
  int stored = 0;
  pthread_mutex_lock(&lock);
  HASH_FIND_PTR(by_handle, &handle, r);
  if (r && r->info.id == info.id) {
    if (ptx) {
      r->ptx = ptx, r->ptx_len = len, ptx = NULL, stored = 1;
    } else {
      snprintf(r->triton_why, sizeof r->triton_why, "the image is a cubin (SASS only) and %s",
               why ? why : "Triton's cache has none");
      r->no_ptx = r->triton_why;
    }
  }
  pthread_mutex_unlock(&lock);
  if (stored) {
    KC_LOG(KC_LOG_INFO, "kcheck: PTX of %s (image %d) from Triton's cache: %s", kernel, info.id,
           from);
    kc_report_emit("image_ptx", json_pack("{s:i, s:s, s:s, s:s}", "image", info.id, "kernel",
                                          kernel, "source", "triton_cache", "path", from));
  }
  free(ptx);
}

char *kc_image_ptx(void *handle, const char *kernel, const char **why) {
  if (kernel) triton_lookup(handle, kernel);
  struct image_rec *r = NULL;
  char *copy = NULL;
  pthread_mutex_lock(&lock);
  HASH_FIND_PTR(by_handle, &handle, r);
  if (!r) {
    *why = "the load of the kernel's image was not seen";
  } else if (!r->ptx) {
    *why = r->no_ptx ? r->no_ptx : "the image carries no PTX";
  } else if (!(copy = malloc(r->ptx_len + 1))) {
    *why = "out of host memory";
  } else {
    memcpy(copy, r->ptx, r->ptx_len + 1);
  }
  pthread_mutex_unlock(&lock);
  return copy;
}

int kc_image_lookup(void *handle, struct kc_image_info *out) {
  struct image_rec *r = NULL;
  pthread_mutex_lock(&lock);
  HASH_FIND_PTR(by_handle, &handle, r);
  if (r) *out = r->info;
  pthread_mutex_unlock(&lock);
  return r ? 0 : -1;
}
