/* libkcheck/capture/uninit.h — which device allocations some operation has touched
 * since they were allocated (graph_uninit=1), for the uninit gate: a kernel
 * node of a replayed CUDA graph whose result changes when an allocation
 * nothing has touched yet is poison-filled reads never-initialised memory.
 *
 * Touched: an allocation a kernel launch had a pointer parameter into
 * (eager, or a replayed graph node once it ran), the destination of a
 * tracked copy or memset, a memcpy/memset node of a replayed graph. An
 * operation kcheck cannot attribute (2D/3D/batch/array/peer copies, 2D
 * memsets, a graph launched without a replay) touches every live
 * allocation: forgetting only loses findings. Allocations are told apart
 * by allocmap's number, so memory reallocated at a freed address is
 * untouched again. Managed allocations never count (the host writes them
 * without a driver call). */
#ifndef KC_UNINIT_H
#define KC_UNINIT_H

#include <stdint.h>

struct kc_launch_info;

/* The allocation containing addr (if kcheck's map knows it) was touched. */
void kc_uninit_touch_addr(uint64_t addr);
/* Every pointer parameter of a launch (resolved) touches its allocation. */
void kc_uninit_touch_launch(const struct kc_launch_info *li);
/* An operation kcheck cannot attribute: every live allocation is touched. */
void kc_uninit_touch_all(void);
/* 1 when nothing has touched the allocation starting at base since it was
 * allocated, and it is of a kind that counts. */
int kc_uninit_untouched(uint64_t base);
void kc_uninit_postfork_child(void);

#endif
