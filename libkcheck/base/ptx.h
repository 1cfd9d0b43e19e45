/* libkcheck/base/ptx.h — reading and rewriting one kernel of a PTX module.
 * ptx_scan.c finds the kernel's body, its module-scope variables and the
 * atomics whose order can change its result; ptx_rewrite.c makes the copy
 * with seeded per-warp delays that the intra-block strategies run
 * (libkcheck/exec/intra.c). Plain text processing of nvcc/LLVM-style PTX (one
 * statement per line); anything it does not understand makes the kernel
 * "not perturbable", never a wrong copy. */
#ifndef KC_PTX_H
#define KC_PTX_H

#include <stddef.h>

/* Where kernel `name` is defined in ptx: [start, end) covers the whole
 * definition (from the line holding `.entry` to its closing brace), body
 * the offset just past the body's opening brace. 0, or -1 when absent. */
struct kc_ptx_span {
  size_t start, body, end;
};
int kc_ptx_find_entry(const char *ptx, const char *name, struct kc_ptx_span *sp);

/* The atomics of a kernel whose order can change its result: float
 * additions (atom/red .add.f16/.bf16/.f32/.f64: rounding follows order),
 * and atomics whose returned value addresses a later store or atomic (a
 * worklist slot: which item lands where follows order). Integer atomics
 * whose result only feeds comparisons (last-block-done counters, locks)
 * and integer red.add are order-independent in their effect on memory and
 * not counted. first: the first such instruction, for evidence. */
struct kc_ptx_atomics {
  int float_adds;    /* float atom/red add instructions */
  int slot_atomics;  /* atomics whose result addresses a store */
  int other_atomics; /* the rest (integer, results only compared) */
  char first[120];   /* first order-dependent instruction ("" if none) */
};
/* Scans the body of the kernel at sp. */
void kc_ptx_scan_atomics(const char *ptx, const struct kc_ptx_span *sp, struct kc_ptx_atomics *a);

/* Module-scope .global and .const variables (the kernel's copy needs the
 * application module's values): up to max names into names (each up to 127
 * chars); returns how many, or -1 when the module declares texture,
 * surface or sampler references (not copyable). */
int kc_ptx_module_vars(const char *ptx, char (*names)[128], int max);

/* The name of the perturbation's configuration in the copy: 8 u32 words,
 * see enum kc_intra_cfg. */
#define KC_PTX_CFG "kc_intra_cfg"
enum kc_intra_cfg {
  KC_CFG_SEED,   /* per-run seed */
  KC_CFG_PMEM,   /* probability (of 256) of a delay before a memory access */
  KC_CFG_PBAR,   /* probability (of 256) of a delay before a barrier */
  KC_CFG_MASK,   /* delay in ns: a random number AND this mask */
  KC_CFG_START,  /* warp start delay in ns: a random number AND this mask */
  KC_CFG_BSTART, /* block start delay in ns (the same for the block's warps), likewise */
  KC_CFG_LOG,    /* 1: the sampled blocks log their memory accesses (access-level check) */
  KC_CFG_BUF_LO, /* the log: KC_CFG_CAP records (struct kc_access) */
  KC_CFG_BUF_HI,
  KC_CFG_CAP,
  KC_CFG_COUNT,  /* records the run wanted to write (may exceed the capacity) */
  KC_CFG_STRIDE, /* blocks whose linear index is a multiple of this log (>= 1) */
  KC_CFG_WORDS = 16
};
/* One logged event (32 bytes): a shared- or global-memory access, or a
 * fence of GPU or system scope. addr: the byte address (shared: the
 * block's shared window; global: the global address); who: thread (linear
 * in the block) | kind << 16 | size << 20 | KC_ACC_GLOBAL; epoch: barrier
 * epoch (bar.sync count) | warp epoch (bar.warp.sync count) << 16; block:
 * linear block index; site: index into kc_ptx_sites; seq: the thread's
 * own event count (program order). */
struct kc_access {
  unsigned long long addr;
  unsigned who, epoch, block, site, seq, spare;
};
/* Kinds. Strong reads and writes (volatile, relaxed, acquire, release)
 * do not race with each other or with atomics (PTX memory model: morally
 * strong); they still race with plain accesses. A fence record orders
 * nothing by itself: a fence followed by an atomic or strong write is a
 * release (access.c). */
enum { KC_ACC_READ, KC_ACC_WRITE, KC_ACC_ATOMIC, KC_ACC_SREAD, KC_ACC_SWRITE, KC_ACC_FENCE };
#define KC_ACC_GLOBAL (1u << 25)
/* The logged sites of a copy: their statement and source line; calls:
 * call instructions in the kernel's body (what a callee does is not
 * logged, so orderings between blocks are not judged). */
struct kc_ptx_sites {
  int n;
  char **text;
  int calls;
};
void kc_ptx_sites_free(struct kc_ptx_sites *s);
/* The module text of a perturbed copy of kernel name: the other kernels
 * removed, KC_PTX_CFG declared, a seeded per-warp state at entry and a
 * delay before every shared/global/generic load, store and atomic and
 * every barrier; and, before every shared, global or generic (resolved at
 * run time to shared or global) load, store and atomic and every GPU- or
 * system-scope fence, a record into the configured log when KC_CFG_LOG is
 * set (the blocks KC_CFG_STRIDE samples). A thread's repeat of its last
 * logged access (same site and address, no barrier or fence between: a
 * spin loop) is not logged again. sites: how many
 * delays were inserted; logged: the logged sites (may be NULL). Returns a
 * malloc'd text, or NULL with *why. */
char *kc_ptx_perturbed_copy(const char *ptx, const char *name, int *sites,
                            struct kc_ptx_sites *logged, const char **why);

#endif
