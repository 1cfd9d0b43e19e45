/* libkcheck/capture/image_copy.c — a private copy of a loaded image's bytes,
 * for the Sanitizer route's second module (libkcheck/exec/san_route.c).
 * The application may have freed or reused the memory it loaded from:
 * the bytes are read with process_vm_readv (an unmapped page is an error,
 * not a fault in the host process) and must hash as they did at load. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "image.h"

void *kc_image_copy(void *handle, size_t *size, const char **why) {
  struct kc_image_info info;
  if (kc_image_lookup(handle, &info)) {
    *why = "the kernel's image load was not seen";
    return NULL;
  }
  if (!info.bytes || !info.size) {
    *why = "the kernel's image was loaded from a file";
    return NULL;
  }
  void *out = malloc(info.size);
  if (!out) {
    *why = "out of host memory";
    return NULL;
  }
  struct iovec local = {out, info.size}, remote = {(void *)info.bytes, info.size};
  ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  if (n != (ssize_t)info.size || XXH3_64bits(out, info.size) != info.hash) {
    free(out);
    *why = "the application has freed or changed the memory it loaded the kernel's image from";
    return NULL;
  }
  *size = info.size;
  return out;
}
