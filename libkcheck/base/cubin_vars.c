/* libkcheck/base/cubin_vars.c — reading a cubin's ELF with every offset
 * checked against the image, and the module-scope variables (__device__,
 * __constant__) it defines, by its symbol table: the Sanitizer route's copy
 * of a module must see the application module's values. */
#include "cubin_vars.h"

#include <elf.h>
#include <stdio.h>
#include <string.h>

int kc_cubin_in(size_t len, uint64_t off, uint64_t n) { return off <= len && n <= len - off; }

int kc_cubin_header(const void *elf, size_t len, Elf64_Ehdr *eh) {
  const unsigned char *p = elf;
  if (len < sizeof *eh || memcmp(p, ELFMAG, SELFMAG) || p[EI_CLASS] != ELFCLASS64) return -1;
  memcpy(eh, p, sizeof *eh);
  if (eh->e_shentsize != sizeof(Elf64_Shdr) ||
      !kc_cubin_in(len, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)) ||
      eh->e_shstrndx >= eh->e_shnum)
    return -1;
  Elf64_Shdr strs;
  kc_cubin_section(elf, eh, eh->e_shstrndx, &strs);
  return kc_cubin_in(len, strs.sh_offset, strs.sh_size) ? 0 : -1;
}

void kc_cubin_section(const void *elf, const Elf64_Ehdr *eh, unsigned i, Elf64_Shdr *sh) {
  /* memcpy: the table need not be aligned in the caller's copy */
  memcpy(sh, (const unsigned char *)elf + eh->e_shoff + (size_t)i * sizeof *sh, sizeof *sh);
}

int kc_cubin_vars(const void *elf, size_t len, char (*names)[128], int max) {
  const unsigned char *p = elf;
  Elf64_Ehdr eh;
  if (kc_cubin_header(elf, len, &eh)) return -1;
  Elf64_Shdr strs, sh, str, at;
  kc_cubin_section(elf, &eh, eh.e_shstrndx, &strs);
  int n = 0;
  for (unsigned i = 0; i < eh.e_shnum; i++) {
    kc_cubin_section(elf, &eh, i, &sh);
    if (sh.sh_type != SHT_SYMTAB || sh.sh_link >= eh.e_shnum) continue;
    kc_cubin_section(elf, &eh, sh.sh_link, &str);
    if (!kc_cubin_in(len, sh.sh_offset, sh.sh_size) ||
        !kc_cubin_in(len, str.sh_offset, str.sh_size))
      return -1;
    size_t nsym = sh.sh_size / sizeof(Elf64_Sym);
    for (size_t k = 0; k < nsym; k++) {
      Elf64_Sym s;
      memcpy(&s, p + sh.sh_offset + k * sizeof s, sizeof s);
      if (ELF64_ST_TYPE(s.st_info) != STT_OBJECT || s.st_shndx == SHN_UNDEF ||
          s.st_shndx >= eh.e_shnum || s.st_name >= str.sh_size)
        continue;
      kc_cubin_section(elf, &eh, s.st_shndx, &at);
      if (at.sh_name >= strs.sh_size) continue;
      const char *sec = (const char *)p + strs.sh_offset + at.sh_name;
      const char *name = (const char *)p + str.sh_offset + s.st_name;
      size_t room = strs.sh_size - at.sh_name, nroom = str.sh_size - s.st_name;
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

uint64_t kc_cubin_load_bytes(const void *elf, size_t len) {
  Elf64_Ehdr eh;
  if (kc_cubin_header(elf, len, &eh)) return len;
  uint64_t sum = 0;
  Elf64_Shdr sh;
  for (unsigned i = 0; i < eh.e_shnum; i++) {
    kc_cubin_section(elf, &eh, i, &sh);
    /* SHF_ALLOC: code, constant banks, initialised and zero-filled
     * (NOBITS, no bytes in the file) globals; the static shared memory
     * sections count too, more than the device takes, never less */
    if (sh.sh_flags & SHF_ALLOC)
      sum += sh.sh_size < KC_CUBIN_LOAD_MAX ? sh.sh_size : KC_CUBIN_LOAD_MAX;
    if (sum >= KC_CUBIN_LOAD_MAX) return KC_CUBIN_LOAD_MAX;
  }
  return sum;
}
