/* contract/shadow_buffers.h — kcheck's own copies of a contracted launch's
 * tensors: each tensor in a fresh device buffer between guard zones, the
 * launch re-run on them with relocated parameters, results read back. The
 * contract gates (coverage, immutability, bounds) judge what comes back;
 * the application's memory is only ever read. */
#ifndef KC_SHADOW_BUFFERS_H
#define KC_SHADOW_BUFFERS_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "contract.h"
#include "guardzone.h"
#include "launch.h"
#include "shadow.h"

/* Bytes of guard zone on each side of a tensor, and the byte they hold
 * (the one guard byte of every level: the audit's allocator's too). */
#define KC_CONTRACT_SB_GUARD 256u
#define KC_CONTRACT_SB_GUARD_BYTE KC_GZ_FILL
/* At other shapes (kc_contract_sb_create_at with new scalars) the guard
 * after a tensor is sized independently of the contract: at least this
 * many bytes past the extent, and as far as the application's allocation
 * scaled by the relaunch's thread count reaches, up to the maximum. */
#define KC_CONTRACT_SB_RESHAPED_GUARD (64ull << 10)
#define KC_CONTRACT_SB_RESHAPED_MAX (64ull << 20)
/* At the application's shape, bytes a tensor's declared extent may reach
 * past the allocation behind its pointer and still be run (the part past
 * it is poison; coverage reports it unwritten). Beyond, the shape
 * overstates the tensor and the contract is skipped at that launch. */
#define KC_CONTRACT_SB_OVERSTATED_SLACK (64ull << 20)

struct kc_contract_sb_tensor {
  const struct kc_contract_tensor_val *t; /* shape, strides, declaration */
  enum kc_contract_role role;
  int esize;             /* bytes per element */
  uint32_t param_offset; /* where its pointer lies in the parameter bytes */
  uint64_t bytes;        /* extent: highest element offset + 1, in bytes */
  /* Guard bytes after the extent: KC_CONTRACT_SB_GUARD, or more where the
   * application's allocation extends further past the pointer than the
   * contract declares, so that everything the kernel could reach in the
   * application's launch is kcheck's own (guard) memory here; at other
   * shapes at least KC_CONTRACT_SB_RESHAPED_GUARD, whatever the contract
   * declares. */
  uint64_t tail;
  CUdeviceptr alloc;      /* KC_CONTRACT_SB_GUARD + bytes + tail */
  CUdeviceptr dev;        /* alloc + KC_CONTRACT_SB_GUARD: what the kernel gets */
  const void *host_input; /* caller-provided input data (bytes long); NULL: copy */
  void *owned_input;      /* host_input when kcheck generated it (freed with sb) */
  /* Host copies of the whole allocation (guards included), filled by
   * kc_contract_sb_run: right before the launch and after it. */
  unsigned char *before, *after;
};

struct kc_contract_sb {
  const struct kc_launch_info *li;
  const struct kc_contract *c; /* the contract it was made from */
  struct kc_contract_binding b;
  int n;
  struct kc_contract_sb_tensor t[64];
  unsigned char *params; /* relocated copy of the parameter bytes */
  int runs;
  /* The launch shape: the application's, or from the contract's launch
   * section when kc_contract_sb_create_at changed the scalars. */
  unsigned grid[3], block[3], shmem;
  int reshaped; /* scalars differ from the application's launch */
};

/* Binds c to the launch and allocates a guarded device buffer per tensor.
 * A tensor whose pointer lies in no known allocation refuses the contract
 * at this launch (-1). Every tensor is sized before anything is allocated:
 * shadows over mem_budget or what device_mem_budget leaves, or (at the
 * application's shape) a shape that declares more than
 * KC_CONTRACT_SB_OVERSTATED_SLACK bytes past the allocation behind its
 * pointer, are a skip (1, the reason in err). 0 on success; -1 with why in
 * err on other errors (nothing stays allocated either way). */
int kc_contract_sb_create(struct kc_contract_sb *s, const struct kc_launch_info *li,
                          const struct kc_contract *c, char *err, size_t n);
/* As kc_contract_sb_create, with the scalars set to ivals (one per contract scalar,
 * binding order; NULL: the launch's own). Changed scalars are written into
 * the parameter copy, shapes re-evaluated, the domain checked, and grid,
 * block and shared memory taken from the contract's launch section.
 * Returns 0; 1 when the domain rejects ivals or the budgets refuse the
 * shadows (why in err, nothing allocated); -1 on other errors. */
int kc_contract_sb_create_at(struct kc_contract_sb *s, const struct kc_launch_info *li,
                             const struct kc_contract *c, const int64_t *ivals, char *err,
                             size_t n);
/* One run: guards filled, inputs (in, inout) copied from the launch's pre-
 * state (sh's saved copy when sh covers the pointer, else the application's
 * buffer, read only) or host_input, outputs filled with `poison`; the
 * kernel launched on the shadow tensors; everything read back into
 * before/after. 0 on success; -1 with why in err. */
int kc_contract_sb_run(struct kc_contract_sb *s, struct kc_shadow *sh, unsigned char poison,
                       char *err, size_t n);
void kc_contract_sb_free(struct kc_contract_sb *s);

/* Visits the logical elements of tensor i in row-major index order; fn gets
 * the element's multi-index and its byte offset from the tensor's start and
 * returns nonzero to stop. */
typedef int (*kc_contract_sb_elem_fn)(void *ctx, const int64_t *idx, int rank, uint64_t byte_off);
void kc_contract_sb_each_element(const struct kc_contract_sb_tensor *t, kc_contract_sb_elem_fn fn,
                                 void *ctx);

#endif
