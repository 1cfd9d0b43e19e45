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

static int same(const char *a, const char *b) {
  while (*a && *a == *b)
    a++, b++;
  return *a == *b;
}

static uint32_t gnu_hash(const char *s) {
  uint32_t h = 5381;
  for (; *s; s++)
    h = h * 33 + (uint8_t)*s;
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
    if ((h | 1) == (h2 | 1) && same(strtab + s->st_name, name) && s->st_value &&
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

/* Plain loops instead of strstr: this runs before sanitizer runtimes that
 * intercept the string functions are initialized. */
static int is_libc(const char *n) {
  for (; n && *n; n++)
    if (n[0] == 'l' && n[1] == 'i' && n[2] == 'b' && n[3] == 'c' && n[4] == '.' && n[5] == 's' &&
        n[6] == 'o')
      return 1;
  return 0;
}

int kc_shim_resolve_dl(void) {
  if (kc_real_dlsym && kc_real_dlvsym) return 0;
  /* Walk the dynamic linker's list of loaded objects directly: no function
   * call here may be intercepted (ASan intercepts dl_iterate_phdr and calls
   * dlsym while it initializes, i.e. before its interceptors work). */
  for (struct link_map *m = _r_debug.r_map; m; m = m->l_next) {
    if (!is_libc(m->l_name) || !m->l_ld) continue;
    void *s = find_symbol(m->l_addr, m->l_ld, "dlsym");
    void *v = find_symbol(m->l_addr, m->l_ld, "dlvsym");
    if (!s || !v) return -1;
    kc_real_dlvsym = (void *(*)(void *, const char *, const char *))v;
    kc_real_dlsym = (void *(*)(void *, const char *))s;
    return 0;
  }
  return -1;
}
