/* libkcheck/base/own.h — device memory kcheck allocated for itself (snapshots,
 * perturbation buffers). A word of a launch's parameters that points into
 * it is a false pointer (stale stack bytes in a parameter struct): never
 * snapshotted, compared or restored as if the application owned it. */
#ifndef KC_OWN_H
#define KC_OWN_H

#include <stdint.h>

void kc_own_add(uint64_t base, uint64_t size);
void kc_own_remove(uint64_t base);
int kc_own_contains(uint64_t addr);

#endif
