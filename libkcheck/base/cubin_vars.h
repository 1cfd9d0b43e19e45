/* libkcheck/base/cubin_vars.h — reading a cubin (ELF): its bounds-checked
 * headers, and the module-scope variables it defines. */
#ifndef KC_CUBIN_VARS_H
#define KC_CUBIN_VARS_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

/* Whether [off, off + n) lies within len bytes. */
int kc_cubin_in(size_t len, uint64_t off, uint64_t n);
/* The ELF header of elf[0..len) into *eh: 0, or -1 unless it is a 64-bit
 * ELF whose section table and section-name table lie inside the image (a
 * corrupt image is refused, never read past its end). */
int kc_cubin_header(const void *elf, size_t len, Elf64_Ehdr *eh);
/* Section i's header (i < eh->e_shnum of a header kc_cubin_header took). */
void kc_cubin_section(const void *elf, const Elf64_Ehdr *eh, unsigned i, Elf64_Shdr *sh);

/* The names of the __device__ and __constant__ variables elf[0..len)
 * defines, up to max into names; how many, or -1 when the ELF cannot be
 * read or holds more than max. */
int kc_cubin_vars(const void *elf, size_t len, char (*names)[128], int max);
/* The bytes elf[0..len) asks the device to hold when loaded: the sizes of
 * its allocated sections (code and data, zero-filled data included), at
 * most KC_CUBIN_LOAD_MAX (a corrupt header's sizes cannot overflow a
 * caller's arithmetic); len when the ELF cannot be read. The bound of a
 * module's device memory (devmem.h). */
#define KC_CUBIN_LOAD_MAX (1ull << 40)
uint64_t kc_cubin_load_bytes(const void *elf, size_t len);

#endif
