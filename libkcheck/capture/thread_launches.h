/* libkcheck/capture/thread_launches.h — per-thread record of launched kernels, for
 * the kernels-inside-an-op of op-level checks. */
#ifndef KC_THREAD_LAUNCHES_H
#define KC_THREAD_LAUNCHES_H

struct kc_kernel;

/* Called for every application launch, on the launching thread. */
void kc_thread_note_launch(const struct kc_kernel *k);

#endif
