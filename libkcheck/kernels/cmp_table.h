/* libkcheck/kernels/cmp_table.h — the parameter of kcheck's table kernels
 * (kc_compare_table, kc_hash_table in perturb_kernels.cu), one definition
 * for the kernels, the host that fills it (perturb.c) and the CPU
 * stand-in's versions of the kernels. */
#ifndef KC_CMP_TABLE_H
#define KC_CMP_TABLE_H

/* Regions a launch. */
#define KC_CMP_MAX 64
/* Words a chunk: each block takes chunks in turn. 16 KiB: a region of a few
 * MiB still spreads over every SM (at 64 KiB a 4 MiB region made 64
 * blocks for 132 SMs), and a large one costs a block's reduction per
 * 16 KiB. A whole number of the hash's runs (region_hash.h). */
#ifndef KC_CMP_CHUNK
#define KC_CMP_CHUNK 4096ull
#endif

/* Region r: a[r] (and b[r], compared with it) over words[r] 32-bit words,
 * chunks start[r] .. start[r + 1] - 1 of the launch; n regions. */
struct kc_cmp_table {
  unsigned long long a[KC_CMP_MAX], b[KC_CMP_MAX], words[KC_CMP_MAX];
  unsigned long long start[KC_CMP_MAX + 1];
  unsigned long long n;
};

#endif
