/* libkcheck/base/guardzone.h — a non-caching device allocator with guard
 * zones for the audit's bounds gate (PyTorch's CUDAPluggableAllocator
 * calls kcheck_guard_alloc/kcheck_guard_free, include/kcheck.h): every
 * allocation gets its own driver allocation, the data between a zone
 * before it and a zone after it filled with KC_GZ_FILL, so a kernel's
 * store outside a tensor changes a guard byte that a check then finds. */
#ifndef KC_GUARDZONE_H
#define KC_GUARDZONE_H

#include <cuda.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* The zone before the data (which keeps the data 256-byte aligned, as
 * PyTorch expects) and the least after it; the data's size is rounded up
 * to KC_GZ_ALIGN, the slack joining the zone after. KC_GZ_FILL is kcheck's
 * one guard byte: the kernel and op levels' guard zones hold it too
 * (contract/shadow_buffers.h, kcheck._defs.GUARD_BYTE). */
#define KC_GZ_FRONT 256u
#define KC_GZ_BACK 256u
#define KC_GZ_ALIGN 256u
#define KC_GZ_FILL 0xCBu
/* Bytes of a damaged zone kept from its first changed byte on. */
#define KC_GZ_SHOWN 16u

/* One allocation whose guard bytes changed. */
struct kc_gz_damage {
  uint64_t data, size;     /* the allocation as its caller sees it */
  int after;               /* 1: a byte past the end changed (reported first); 0: only before */
  uint64_t distance;       /* after: bytes past the end (0: the first byte after it);
                              before: bytes before the start (1: the byte just before) */
  uint64_t changed_before; /* changed bytes in the zone before the data */
  uint64_t changed_after;  /* and after it (the rounding slack included) */
  unsigned char shown[KC_GZ_SHOWN]; /* the zone's bytes from the first changed one */
  unsigned nshown;
  int freed; /* found when the allocation was freed, before this check */
};

/* The allocator (device: its ordinal; stream: where the memory is first
 * used, filled on it). NULL for size 0 or a driver failure (logged). A
 * free may come on a thread with no context: the device's primary one. */
void *kc_gz_alloc(size_t size, int device, CUstream stream);
void kc_gz_free(void *data, int device, CUstream stream);
/* The byte each new allocation's data is filled with from now on (the
 * coverage gate's poison; -1: left as the driver gives it); returns the
 * previous one. */
int kc_gz_fill(int byte);
/* Live allocations now. */
size_t kc_gz_live(void);
/* Waits for the device, then reads every live allocation's zones: up to
 * max damaged ones into out, the live ones first (the tensors still
 * held), then those found at a free since the last check; each damaged
 * zone filled again, so the next check reports only new damage. Returns
 * how many allocations were damaged (may exceed max), or -1 when the
 * driver failed (*err: its CUresult). */
long kc_gz_check(struct kc_gz_damage *out, size_t max, CUresult *err);
/* One damaged allocation as kcheck_guard_check's JSON (include/kcheck.h). */
json_t *kc_gz_damage_json(const struct kc_gz_damage *d);

#endif
