/* shim/real_dl.c — finds glibc's own dlsym and dlvsym. kcheck exports both
 * names, so any ordinary lookup (even dlvsym with a version) would find
 * kcheck's; the real ones are read from libc's dynamic symbol table. */
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

#include "shim.h"

void *(*kc_real_dlsym)(void *, const char *);
void *(*kc_real_dlvsym)(void *, const char *, const char *);

struct lookup {
  const char *names[2];
  void *found[2];
};

static uint32_t gnu_hash(const char *s) {
  uint32_t h = 5381;
  for (; *s; s++) h = h * 33 + (uint8_t)*s;
  return h;
}

/* ld.so relocates these d_ptr entries in place on x86-64; be robust where
 * it does not. */
static uintptr_t dyn_addr(uintptr_t base, ElfW(Addr) p) { return p < base ? base + p : p; }

static void *find_symbol(uintptr_t base, const ElfW(Dyn) * dyn, const char *name) {
  const ElfW(Sym) *symtab = NULL;
  const char *strtab = NULL;
  const uint32_t *gnuhash = NULL;
  const ElfW(Half) *versym = NULL;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    switch (dyn->d_tag) {
    case DT_SYMTAB: symtab = (const void *)dyn_addr(base, dyn->d_un.d_ptr); break;
    case DT_STRTAB: strtab = (const void *)dyn_addr(base, dyn->d_un.d_ptr); break;
    case DT_GNU_HASH: gnuhash = (const void *)dyn_addr(base, dyn->d_un.d_ptr); break;
    case DT_VERSYM: versym = (const void *)dyn_addr(base, dyn->d_un.d_ptr); break;
    default: break;
    }
  }
  if (!symtab || !strtab || !gnuhash) return NULL;
  uint32_t nbuckets = gnuhash[0], symoffset = gnuhash[1], bloom_size = gnuhash[2];
  const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(gnuhash + 4) + bloom_size);
  const uint32_t *chain = buckets + nbuckets;
  uint32_t h = gnu_hash(name);
  uint32_t idx = buckets[h % nbuckets];
  if (idx < symoffset) return NULL;
  void *fallback = NULL;
  for (;; idx++) {
    uint32_t h2 = chain[idx - symoffset];
    const ElfW(Sym) *s = &symtab[idx];
    if ((h | 1) == (h2 | 1) && !strcmp(strtab + s->st_name, name) && s->st_value &&
        ELF64_ST_TYPE(s->st_info) == STT_FUNC) {
      void *addr = (void *)(base + s->st_value);
      /* Prefer the default version (dlsym@@GLIBC_2.34 over the compat one). */
      if (!versym || !(versym[idx] & 0x8000)) return addr;
      fallback = addr;
    }
    if (h2 & 1) break;
  }
  return fallback;
}

static int visit(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct lookup *l = arg;
  const char *n = info->dlpi_name;
  if (!n || !strstr(n, "libc.so")) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
    const ElfW(Dyn) *dyn = (const void *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    for (int k = 0; k < 2; k++) l->found[k] = find_symbol(info->dlpi_addr, dyn, l->names[k]);
    return 1;
  }
  return 0;
}

int kc_shim_resolve_dl(void) {
  if (kc_real_dlsym && kc_real_dlvsym) return 0;
  struct lookup l = {{"dlsym", "dlvsym"}, {NULL, NULL}};
  dl_iterate_phdr(visit, &l);
  if (!l.found[0] || !l.found[1]) return -1;
  kc_real_dlvsym = (void *(*)(void *, const char *, const char *))l.found[1];
  kc_real_dlsym = (void *(*)(void *, const char *))l.found[0];
  return 0;
}
