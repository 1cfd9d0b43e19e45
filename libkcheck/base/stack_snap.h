/* libkcheck/base/stack_snap.h — a thread's host stack taken as its registers
 * and a copy of its stack memory (tens of microseconds), unwound later on
 * another thread by libdw's CFI unwinder, the way sampling profilers unwind
 * a copied user stack. A finding's check then no longer reads the unwind
 * tables of every library on the launching thread's stack (libtorch_cuda's
 * among them); kcheck's findings thread does, beside its symbolisation. On
 * the H200 the training step's check with findings took 21.1 ms in the
 * first process on a freshly started machine when it unwound in place,
 * 1.8-2.0 ms with the copy (bench/results/2026-12-04-targets-da12f37.md). x86-64 only: elsewhere
 * kc_stack_snap_take gives NULL and the caller unwinds in place. */
#ifndef KC_STACK_SNAP_H
#define KC_STACK_SNAP_H

#include <stdint.h>

struct kc_stack_snap;

/* This thread's registers and up to KC_STACK_SNAP_BYTES of its stack from
 * the stack pointer up; NULL when it cannot be taken (no memory, the copy
 * refused, another architecture). */
#define KC_STACK_SNAP_BYTES (512u << 10)
struct kc_stack_snap *kc_stack_snap_take(void);
/* The return addresses of the snapshot's frames, innermost first (the
 * first is kc_stack_snap_take's own), at most max; the number found, 0
 * when none (the unwinder could not start). Any thread, any time after the
 * take, while the modules on the stack stay loaded. */
int kc_stack_snap_pcs(const struct kc_stack_snap *s, uint64_t *pcs, int max);
void kc_stack_snap_free(struct kc_stack_snap *s);

#endif
