/* libkcheck/base/sass_atomics.c — float atomics in SASS (sass_atomics.h).
 * The encodings are not documented; they were read off cubins nvcc 13.0
 * wrote for sm_80/86/89/90/100/120 (test/unit/data/sass_atomics.cu holds
 * the kernels, test_sass_atomics.c checks the committed cubins): the opcode
 * is the low 12 bits of the 128-bit instruction; RED and ATOMG keep their
 * operand type in bits 9-11 of the high word (3 F32, 6 F64); from sm_90
 * the float forms have opcodes of their own. */
#include "sass_atomics.h"

#include "cubin_vars.h"

#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum {
  OP_RED = 0x98e,        /* RED (type in hi bits 9-11) */
  OP_ATOMG = 0x9a8,      /* ATOMG (type in hi bits 9-11) */
  OP_RED_F = 0x9a6,      /* sm_90+: RED.E.ADD.F32/F64 */
  OP_ATOMG_F = 0x9a3,    /* sm_90+: ATOMG.E.ADD.F32 */
  OP_ATOM_F = 0x3aa,     /* ATOM (generic) .ADD of a float type, F16x2, BF16x2 */
  OP_ATOMG_CAS = 0x3a9,  /* ATOMG.CAS */
  OP_ATOM = 0x98a,       /* ATOM (generic), integer */
  OP_ATOM_CAS = 0x38b,   /* ATOM.CAS (generic) */
  OP_ATOMS = 0x38c,      /* ATOMS */
  OP_ATOMS_CAS = 0x38d,  /* ATOMS.CAS (sm_80..90) */
  OP_ATOMS_CAS2 = 0x58d, /* ATOMS.CAS (sm_100+) */
};

/* The kernel's .text section: its offset and size. */
static int text_of(const unsigned char *p, size_t len, const char *kernel, uint64_t *off,
                   uint64_t *size, unsigned *sm) {
  Elf64_Ehdr eh;
  if (kc_cubin_header(p, len, &eh)) return -1;
  /* The CUDA ELF ABI moved the SM field: version 8 (ptxas 13) keeps it in
   * bits 8-15, version 7 and older (the ptxas 12.x Triton bundles) in
   * bits 0-7. */
  *sm = p[EI_ABIVERSION] >= 8 ? (eh.e_flags >> 8) & 0xff : eh.e_flags & 0xff;
  Elf64_Shdr sh, strs;
  kc_cubin_section(p, &eh, eh.e_shstrndx, &strs);
  char want[512];
  int w = snprintf(want, sizeof want, ".text.%s", kernel);
  if (w <= 0 || (size_t)w >= sizeof want) return -1;
  for (unsigned i = 0; i < eh.e_shnum; i++) {
    kc_cubin_section(p, &eh, i, &sh);
    if (sh.sh_name >= strs.sh_size || strs.sh_size - sh.sh_name < (uint64_t)w + 1) continue;
    if (memcmp(p + strs.sh_offset + sh.sh_name, want, (size_t)w + 1)) continue;
    if (!kc_cubin_in(len, sh.sh_offset, sh.sh_size)) return -1;
    *off = sh.sh_offset;
    *size = sh.sh_size;
    return 0;
  }
  return -1;
}

int kc_sass_atomics(const void *elf, size_t len, const char *kernel, struct kc_ptx_atomics *a,
                    int *returning, const char **why) {
  const unsigned char *p = elf;
  uint64_t off = 0, size = 0;
  unsigned sm = 0;
  memset(a, 0, sizeof *a);
  *returning = 0;
  if (text_of(p, len, kernel, &off, &size, &sm)) {
    *why = "the kernel's SASS is not in its cubin";
    return -1;
  }
  if (sm < 80 || sm > 121) {
    *why = "the kernel's SASS is for an architecture whose atomics kcheck cannot read";
    return -1;
  }
  for (uint64_t i = 0; i + 16 <= size; i += 16) {
    uint64_t lo, hi;
    memcpy(&lo, p + off + i, 8);
    memcpy(&hi, p + off + i + 8, 8);
    unsigned op = lo & 0xfff, type = (hi >> 9) & 7;
    int fl = 0;
    switch (op) {
    case OP_RED:
      fl = type == 3 || type == 6;
      if (!fl) a->other_atomics++;
      break;
    case OP_ATOMG:
      fl = type == 3 || type == 6;
      if (!fl) (*returning)++;
      break;
    case OP_RED_F:
    case OP_ATOMG_F: fl = sm >= 90; break;
    case OP_ATOM_F: fl = 1; break;
    case OP_ATOMG_CAS:
    case OP_ATOM:
    case OP_ATOM_CAS:
    case OP_ATOMS:
    case OP_ATOMS_CAS:
    case OP_ATOMS_CAS2: (*returning)++; break;
    default: break;
    }
    if (!fl) continue;
    if (!a->float_adds++)
      snprintf(a->first, sizeof a->first, "SASS +0x%llx: float atomic add (opcode 0x%03x)",
               (unsigned long long)i, op);
  }
  a->other_atomics += *returning;
  return 0;
}
