/* libkcheck/exec/bundle.c — writes a finding's replay bundle (bundle.h): a
 * folder with bundle.json (format kcheck.bundle/1), image.bin (or the path
 * of a module loaded from a file), params.bin and one buf<i>.bin per
 * allocation the launch reaches. The image is read
 * back from where the application loaded it from, with process_vm_readv
 * (a freed image gives an error, never a fault) and kept only when its hash
 * is still the one recorded at load time. */
#include "bundle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "driver.h"
#include "image.h"
#include "kernel.h"
#include "log.h"
#include "options.h"
#include "report.h"

static int write_file(const char *dir, const char *name, const void *p, size_t n) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = kc_file_create(path); /* in the bundle's own new folder */
  if (fd < 0) return -1;
  FILE *f = fdopen(fd, "wb");
  if (!f) {
    close(fd);
    return -1;
  }
  int ok = (n == 0 || fwrite(p, 1, n, f) == n);
  return (fclose(f) == 0 && ok) ? 0 : -1;
}

/* The image's bytes, read without trusting that they are still mapped, and
 * only when they still hash to what was loaded. NULL with why. */
static void *image_bytes(const struct kc_image_info *im, const char **why) {
  if (!im->bytes || !im->size) {
    *why = "the kernel's image bytes are unknown";
    return NULL;
  }
  void *buf = malloc(im->size);
  if (!buf) {
    *why = "out of host memory";
    return NULL;
  }
  struct iovec local = {buf, im->size}, remote = {(void *)im->bytes, im->size};
  ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  if (got != (ssize_t)im->size || XXH3_64bits(buf, im->size) != im->hash) {
    free(buf);
    *why = "the kernel's image is no longer where the application loaded it from";
    return NULL;
  }
  return buf;
}

/* The saved pre-state region that holds allocation [base, base+size). */
static const struct kc_region *region_of(const struct kc_shadow *sh, uint64_t base) {
  for (int i = 0; sh && i < sh->nregions; i++)
    if (sh->regions[i].pre && base >= sh->regions[i].base &&
        base < sh->regions[i].base + sh->regions[i].size)
      return &sh->regions[i];
  return NULL;
}

static const char *write_bundle(const struct kc_launch_info *li, const struct kc_shadow *sh,
                                const char *gate, const char *contracts, const char *dir,
                                json_t *meta) {
  const struct kc_kernel *k = li->k;
  struct kc_image_info im;
  if (!k || k->nparams < 0) return "the kernel's parameter layout is unknown";
  if (!k->image_handle || kc_image_lookup(k->image_handle, &im))
    return "the load of the kernel's image was not seen";
  /* Every allocation the parameter bytes point into, once. */
  const struct kc_region *regs[64];
  int nregs = 0;
  uint64_t total = 0;
  for (int i = 0; i < li->nptrs; i++) {
    const struct kc_region *r = region_of(sh, li->ptrs[i].base);
    if (!r) return "an allocation the launch reaches was not saved by the check";
    int dup = 0;
    for (int j = 0; j < nregs; j++)
      dup |= regs[j] == r;
    if (dup) continue;
    if (nregs == 64) return "the launch reaches more than 64 allocations";
    regs[nregs++] = r;
    total += r->size;
  }
  if (total > kc_opt.repro_budget) return "its input buffers are larger than repro_budget";
  const char *why = NULL;
  /* A module loaded from a file: the bundle refers to the file. */
  int by_path = !im.bytes && !strcmp(im.format, "file") && im.source[0] == '/';
  void *image = by_path ? NULL : image_bytes(&im, &why);
  if (!image && !by_path) return why;
  if (kc_dir_create(dir, 1)) {
    free(image);
    return errno == EEXIST ? "the bundle folder exists already"
                           : "the bundle folder cannot be created";
  }
  int bad = by_path ? 0 : write_file(dir, "image.bin", image, im.size);
  free(image);
  bad |= write_file(dir, "params.bin", li->param_buf, li->param_size);
  json_t *bufs = json_array(), *layout = json_array();
  for (int i = 0; i < nregs && !bad; i++) {
    void *host = malloc(regs[i]->size ? regs[i]->size : 1);
    char name[32];
    snprintf(name, sizeof name, "buf%d.bin", i);
    bad = !host || kc_drv.cuMemcpyDtoH_v2(host, regs[i]->pre, regs[i]->size) != CUDA_SUCCESS ||
          write_file(dir, name, host, regs[i]->size);
    free(host);
    json_array_append_new(bufs,
                          json_pack("{s:s, s:I, s:I}", "file", name, "base",
                                    (json_int_t)regs[i]->base, "size", (json_int_t)regs[i]->size));
  }
  for (int i = 0; i < k->nparams; i++)
    json_array_append_new(layout, json_pack("{s:i, s:i}", "offset", (int)k->param_offset[i], "size",
                                            (int)k->param_size[i]));
  json_object_set_new(meta, "buffers", bufs);
  json_object_set_new(meta, "param_layout", layout);
  if (bad) return "writing the bundle's files failed";
  json_object_set_new(meta, "format", json_string("kcheck.bundle/1"));
  json_object_set_new(meta, "gate", json_string(gate));
  json_object_set_new(meta, "seed", json_integer((json_int_t)kc_opt.seed));
  json_object_set_new(meta, "kernel",
                      json_pack("{s:s, s:s}", "mangled", k->name, "demangled",
                                k->demangled ? k->demangled : k->name));
  json_object_set_new(meta, "image",
                      json_pack("{s:s, s:s, s:o, s:I}", by_path ? "path" : "file",
                                by_path ? im.source : "image.bin", "format", im.format, "hash",
                                kc_json_hash(im.hash), "size", (json_int_t)im.size));
  json_object_set_new(meta, "launch",
                      json_pack("{s:[iii], s:[iii], s:i, s:s, s:I, s:I}", "grid", li->grid[0],
                                li->grid[1], li->grid[2], "block", li->block[0], li->block[1],
                                li->block[2], "shmem", li->shmem, "params", "params.bin",
                                "param_size", (json_int_t)li->param_size, "launch",
                                (json_int_t)li->seq));
  if (contracts && *contracts) json_object_set_new(meta, "contracts", json_string(contracts));
  /* The run's options: the gate's own (race strategies, extra shared
   * memory, ...) decide whether the finding shows again. */
  const char *opts = getenv("KCHECK_OPTIONS");
  json_object_set_new(meta, "options", json_string(opts ? opts : ""));
  char *text = json_dumps(meta, JSON_INDENT(1) | JSON_SORT_KEYS);
  int failed = !text || write_file(dir, "bundle.json", text, strlen(text));
  free(text);
  return failed ? "writing bundle.json failed" : NULL;
}

json_t *kc_bundle_write(const struct kc_launch_info *li, const struct kc_shadow *sh,
                        const char *gate, const char *contracts) {
  if (!kc_opt.repro_dir || !kc_opt.repro_dir[0]) return NULL;
  if (strlen(kc_opt.repro_dir) > 3000)
    return json_pack("{s:s}", "bundle_skipped", "repro_dir is too long a path");
  char dir[4096];
  if (kc_dir_create(kc_opt.repro_dir, 0))
    return json_pack("{s:s}", "bundle_skipped",
                     errno == EPERM ? "repro_dir is not a folder of this user's own"
                                    : "repro_dir cannot be created");
  snprintf(dir, sizeof dir, "%s/bundle-%ld-%llu-%s", kc_opt.repro_dir, (long)getpid(),
           (unsigned long long)li->seq, gate);
  json_t *meta = json_object();
  const char *why = meta ? write_bundle(li, sh, gate, contracts, dir, meta) : "out of memory";
  json_decref(meta);
  return why ? json_pack("{s:s}", "bundle_skipped", why) : json_pack("{s:s}", "bundle", dir);
}
