/* libkcheck/capture/image.h — code images (modules and libraries) whose load kcheck
 * saw: identity, size and a hash of the image bytes. */
#ifndef KC_IMAGE_H
#define KC_IMAGE_H

#include <stddef.h>
#include <stdint.h>

struct kc_image_info {
  int id;
  int is_library;
  uint64_t hash; /* XXH3-64 of the image bytes */
  size_t size;
  char format[8];   /* "elf", "fatbin", "ptx", "file" */
  char source[256]; /* file name, or "memory" */
  /* Where the hashed bytes were when loaded (the application's memory, not
   * owned, maybe freed since): NULL for file loads. */
  const void *bytes;
};

/* Records a successful load; image may be NULL when path is given. */
void kc_image_loaded(void *handle, int is_library, const void *image, const char *path);
void kc_image_unloaded(void *handle);
/* A copy of the PTX image handle carries (malloc'd, NUL-terminated), or
 * NULL with *why (not seen, loaded from a file, SASS only, ...). For a
 * cubin, the PTX Triton's cache keeps for it (kernel: the name Triton
 * files it under; NULL: no search), searched once per image, at the first
 * ask (an `image_ptx` record says where it came from). */
char *kc_image_ptx(void *handle, const char *kernel, const char **why);
/* 0 when the load of handle was seen. */
int kc_image_lookup(void *handle, struct kc_image_info *out);
/* Size of an in-memory image by its header (fatbin wrapper, fatbin, ELF,
 * or NUL-terminated PTX text); sets *format and returns the bytes to hash,
 * which may differ from image for a fatbin wrapper. */
const void *kc_image_extent(const void *image, size_t *size, const char **format);

/* A malloc'd copy of the bytes handle was loaded from (*size bytes), read
 * safely and checked against the hash taken at load; NULL with *why (a
 * file load, bytes freed or changed since). image_copy.c. */
void *kc_image_copy(void *handle, size_t *size, const char **why);

#endif
