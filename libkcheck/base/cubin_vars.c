/* libkcheck/base/cubin_vars.c — the module-scope variables (__device__,
 * __constant__) a cubin defines, by its ELF symbol table: the Sanitizer
 * route's copy of a module must see the application module's values. */
#include "cubin_vars.h"

#include <elf.h>
#include <stdio.h>
#include <string.h>

/* Bounds-checked view of the ELF: a corrupt image gives -1, never a read
 * past its end. */
static int in(size_t len, uint64_t off, uint64_t n) { return off <= len && n <= len - off; }

int kc_cubin_vars(const void *elf, size_t len, char (*names)[128], int max) {
  const unsigned char *p = elf;
  Elf64_Ehdr eh;
  if (len < sizeof eh || memcmp(p, ELFMAG, SELFMAG) || p[EI_CLASS] != ELFCLASS64) return -1;
  memcpy(&eh, p, sizeof eh);
  if (eh.e_shentsize != sizeof(Elf64_Shdr) ||
      !in(len, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr)) ||
      eh.e_shstrndx >= eh.e_shnum)
    return -1;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(p + eh.e_shoff);
  Elf64_Shdr strs = sh[eh.e_shstrndx];
  if (!in(len, strs.sh_offset, strs.sh_size)) return -1;
  int n = 0;
  for (unsigned i = 0; i < eh.e_shnum; i++) {
    if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh.e_shnum) continue;
    Elf64_Shdr str = sh[sh[i].sh_link];
    if (!in(len, sh[i].sh_offset, sh[i].sh_size) || !in(len, str.sh_offset, str.sh_size)) return -1;
    size_t nsym = sh[i].sh_size / sizeof(Elf64_Sym);
    for (size_t k = 0; k < nsym; k++) {
      Elf64_Sym s;
      memcpy(&s, p + sh[i].sh_offset + k * sizeof s, sizeof s);
      if (ELF64_ST_TYPE(s.st_info) != STT_OBJECT || s.st_shndx == SHN_UNDEF ||
          s.st_shndx >= eh.e_shnum || s.st_name >= str.sh_size ||
          sh[s.st_shndx].sh_name >= strs.sh_size)
        continue;
      const char *sec = (const char *)p + strs.sh_offset + sh[s.st_shndx].sh_name;
      const char *name = (const char *)p + str.sh_offset + s.st_name;
      size_t room = strs.sh_size - sh[s.st_shndx].sh_name, nroom = str.sh_size - s.st_name;
      /* .nv.global(.init): __device__; .nv.constantN, N > 0: __constant__
       * (bank 0 holds the kernels' parameters) */
      int var = (strnlen(sec, room) >= 10 && !strncmp(sec, ".nv.global", 10)) ||
                (strnlen(sec, room) > 12 && !strncmp(sec, ".nv.constant", 12) && sec[12] != '0');
      if (!var || strnlen(name, nroom) >= 128 || !name[0]) continue;
      if (n >= max) return -1;
      snprintf(names[n++], 128, "%s", name);
    }
  }
  return n;
}
