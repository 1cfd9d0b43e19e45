/* libkcheck/exec/kernels/cmp_table.h — the parameter of kcheck's table kernels
 * (kc_compare_table, kc_hash_table in perturb_kernels.cu), one definition
 * for the kernels, the host that fills it (perturb.c) and the CPU
 * stand-in's versions of the kernels. */
#ifndef KC_CMP_TABLE_H
#define KC_CMP_TABLE_H

/* Regions a launch. */
#define KC_CMP_MAX 64
/* Words a chunk (each block takes chunks in turn), chosen per launch:
 * 64 KiB where the launch's regions make at least KC_CMP_LARGE_PER_SM such
 * chunks per SM, else 16 KiB. On the H200 (bench/own_kernels) 16 KiB
 * chunks hashed 1-8 MiB in 1.1 copies' time against 1.2-2.1 (at 64 KiB a
 * 4 MiB region made 64 blocks for 132 SMs), but 64-256 MiB in 0.67-0.74
 * against 0.57-0.66 (a block's reduction per 16 KiB). Both are whole
 * numbers of the hash's runs (region_hash.h). */
#define KC_CMP_CHUNK_SMALL 4096ull
#define KC_CMP_CHUNK_LARGE 16384ull
#define KC_CMP_LARGE_PER_SM 4

/* Region r: a[r] (and b[r], compared with it) over words[r] 32-bit words,
 * chunks start[r] .. start[r + 1] - 1 of the launch, each `chunk` words;
 * n regions. */
struct kc_cmp_table {
  unsigned long long a[KC_CMP_MAX], b[KC_CMP_MAX], words[KC_CMP_MAX];
  unsigned long long start[KC_CMP_MAX + 1];
  unsigned long long n;
  unsigned long long chunk;
};

#endif
