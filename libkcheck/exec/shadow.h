/* libkcheck/exec/shadow.h — the shadow executor. One check of one launch:
 * wait for the device, save every allocation the launch can reach
 * (pre-state), let the application's launch run and keep its result (post-
 * state A), re-run the launch from the pre-state under perturbations and
 * hand each result back, finally restore post-state A byte for byte. Gates
 * ask for runs and compare; they never call the driver. */
#ifndef KC_SHADOW_H
#define KC_SHADOW_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "launch.h"

/* Bytes of one of the check's regions a run fills first (kc_perturb). */
struct kc_poison {
  int region;
  uint64_t offset, size;
};

/* A timing perturbation for one re-run; all zero = an identical re-run. */
struct kc_perturb {
  const char *name;     /* strategy name, for evidence */
  int green_sms;        /* >0: run in a green context of this many SMs */
  unsigned extra_shmem; /* extra dynamic shared memory (fewer blocks per SM) */
  int scrub;            /* fill every SM's shared memory with a seeded pattern first */
  int hammer;           /* concurrent memory traffic from another stream */
  int l2flush;          /* evict L2 right before the run */
  /* >0: run kcheck's perturbed copy of the kernel (libkcheck/exec/intra.h)
   * with these delay parameters (enum kc_intra_cfg; the seed is seed's) */
  int intra;
  unsigned intra_pmem, intra_pbar, intra_mask, intra_start, intra_bstart;
  unsigned intra_log;    /* >0: log memory accesses and fences, at most this many */
  unsigned intra_stride; /* with intra_log: only blocks whose index is a multiple (0: all) */
  /* >0: fill these bytes with poison_word (its low byte where the range
   * is not 4-aligned) after the restore: the uninit and stream_delay gates */
  int npoison;
  const struct kc_poison *poison;
  uint32_t poison_word;
  uint64_t seed;
};

/* One saved allocation. Both copies stay on the device (in kcheck's
 * staging buffer): restores are device-to-device copies and comparisons run
 * on the device, so a check costs a few passes over the saved bytes at
 * device bandwidth. An allocation the application's launch left unchanged
 * (an input) has post == pre, and only allocations that may differ from
 * what a run or the application needs are copied back. */
struct kc_region {
  uint64_t base, size;
  CUdeviceptr pre;         /* the pre-state */
  CUdeviceptr post;        /* post-state A (what the application keeps); == pre when unchanged */
  unsigned changed : 1;    /* the application's launch changed it (post != pre) */
  unsigned dirty_pre : 1;  /* the memory may differ from pre */
  unsigned dirty_post : 1; /* the memory may differ from post */
  /* Compared after the current run: the application's launch changed it,
   * kcheck wrote it (restore, poison) or it was not known to equal the
   * pre-state when the run began. */
  unsigned watch : 1;
  /* A run may have written it and no comparison looked (it was not
   * watched): kc_shadow_verify_unwatched settles it. */
  unsigned unverified : 1;
  uint64_t hash_post[2]; /* post-state A's hash (its two lanes), when have_hash */
};

/* The first difference between the latest shadow run and post-state A. */
struct kc_diff {
  uint64_t words;                    /* differing 32-bit words, all regions (0: identical) */
  int region;                        /* region of the first difference */
  uint64_t offset;                   /* its byte offset in the allocation (4-aligned) */
  unsigned char expected[4], got[4]; /* the word there, post-state A and shadow */
  int nbytes;                        /* valid bytes in expected/got (a tail may be short) */
};

struct kc_shadow {
  struct kc_launch_info *li;
  struct kc_region *regions;
  int nregions;
  uint64_t saved_bytes;
  /* Managed allocations: save_all leaves them out (how many, their bytes);
   * a launch whose parameters point into one is not checked. */
  int managed_left_out;
  uint64_t managed_left_out_bytes;
  CUresult app_result; /* the application's launch result */
  int runs;            /* shadow runs made */
  int have_post;       /* post-state A saved */
  double t_start;
  int restored;
  /* Device time (events) of saving the pre-state and of the application's
   * launch, for the check's floor; -1 when unknown. */
  double snapshot_ms, kernel_ms;
  /* Host time of the device synchronisation before the pre-state is saved:
   * the application's work queued before this launch (and other streams'),
   * which a check waits for. Part of cost_ms, not of the floor. */
  double wait_ms;
  CUstream stream;     /* where the check's copies and comparisons go: the launch's stream */
  CUdeviceptr staging; /* kcheck's staging buffer, held for the check */
  CUdeviceptr slots;   /* comparison results in it, 32 bytes per region */
  /* Sets of slots (32 bytes a region each) after `slots`, zeroed together
   * when the pre-state is saved: a hash takes the next one instead of
   * zeroing its own (one memset a check, not one a comparison). */
  CUdeviceptr zeroed_sets;
  int zeroed_left;
  CUdeviceptr pre_slots; /* where the save's hashes went (pre_hashed) */
  /* Post-state A hashed after the application's launch: a re-run's result
   * is hashed (one read of each region) and only a region whose hash
   * differs is compared word by word with post-state A (two reads). */
  /* The pre-state was saved and hashed in one pass (hash_compare, every
   * region a whole number of words): what the application's launch
   * changed is then found by hashing its result, one read of each region,
   * not by comparing it with the saved copy, two. */
  int pre_hashed;
  int pre_published; /* its sums went to mapped host memory (hash_publish) */
  int have_hash;
  int hash_differed; /* regions a hash sent to the word-by-word comparison */
  /* By hash, a run's result is compared only in its watched regions
   * (struct kc_region): the memory a kernel leaves alone, usually most of
   * what it can reach, is hashed once at the end of the check instead of
   * after every run. Set before the first run to hash every region after
   * every run (a contract's gates write memory kcheck does not track;
   * kc_shadow_verify_unwatched found a run's write no comparison saw).
   * kc_shadow_app_launch sets it where the memory the launch left alone
   * is under the unwatched_min option (64 MiB): the hash at the end costs a round trip to
   * the device (on the H200 about 0.02 ms beside its reads, measured as
   * the check time outside the stages: 0.017 -> 0.050 ms a check), more
   * than the runs' reads of so little memory save. */
  int hash_every_region;
  uint64_t hashed_bytes; /* read by hashes after runs and by the verification */
  uint64_t hash_seed;
  uint64_t copied_back; /* bytes restored, for the record */
  /* Set by the caller before kc_shadow_run when kc_shadow_diff follows at
   * once: a run on the check's stream then leaves its wait to the
   * comparison's (one round trip to the device per run, not two). */
  int defer_sync;
  int run_pending; /* a run not waited for yet */
  int run_faulted; /* a run of this check faulted (seen by its wait or the comparison's) */
  /* kc_shadow_begin failed for device memory (mem_budget, device_mem_budget,
   * free memory): a condition the kernel's next launches are likely to meet */
  int memory_refused;
  /* Every device operation of the check's runs was waited for: the last
   * comparison's wait followed a run with no work beside the check's
   * stream (side_work: a helper stream, green context, intra-block
   * strategy). The end then needs no device-wide wait of its own unless
   * it copies. */
  int settled, side_work;
};

/* Syncs and saves the pre-state. 0 on success; else *why says why the launch
 * cannot be checked (the application's launch has not run yet). */
int kc_shadow_begin(struct kc_shadow *s, struct kc_launch_info *li, const char **why);
/* Runs the application's launch exactly once, syncs, saves post-state A.
 * Returns the launch's result, which the application receives. When this
 * fails after the launch ran, *ok is 0 and no shadow run may follow. */
CUresult kc_shadow_app_launch(struct kc_shadow *s, int *ok);
/* The reason a run gives when its kernel faulted (an illegal or
 * misaligned address: the context it ran in is lost); run_faulted is set. */
#define KC_SHADOW_FAULTED "the shadow run faulted"
/* One shadow run: restore the pre-state, perturb, re-launch, sync. The
 * result is left in the application's memory until kc_shadow_end. 0 on
 * success; 1 when the perturbation does not apply to this launch (*why says
 * why); -1 on failure (*why). */
int kc_shadow_run(struct kc_shadow *s, const struct kc_perturb *p, const char **why);
/* Compares the latest run with post-state A. 0 on success (d->words == 0
 * means identical), -1 when the comparison itself failed. */
int kc_shadow_diff(struct kc_shadow *s, struct kc_diff *d);
/* Hashes every region a run may have written unseen (unverified) and
 * compares it with post-state A: 0 all equal (or none to hash), 1 some
 * region differs (a run wrote memory the application's launch left alone;
 * it is restored at the end), -1 the hash failed (those regions are
 * restored at the end). kc_shadow_end calls it when no one did. */
int kc_shadow_verify_unwatched(struct kc_shadow *s);
/* Puts post-state A back into region i (before a diff that must leave it
 * out: a region a run poisoned). 0 on success. */
int kc_shadow_region_reset(struct kc_shadow *s, int i);
/* Whether the application's launch changed region i (pre-state against
 * post-state A): 1, 0, or -1 when unknown. */
int kc_shadow_region_changed(struct kc_shadow *s, int i);
/* Something other than kc_shadow_run may have written the application's
 * memory (a contract gate's runs through a pointer it did not relocate):
 * kc_shadow_end restores every region. */
void kc_shadow_touched(struct kc_shadow *s);
/* Restores post-state A and frees everything. 0 when the application's
 * memory is exactly as its own launch left it. */
int kc_shadow_end(struct kc_shadow *s);

/* cuCtxSynchronize in relaxed stream-capture mode: legal while another
 * thread captures a stream in global mode (a plain sync would invalidate
 * that capture). */
CUresult kc_sync_device(void);

/* The whole of a check runs in relaxed capture mode on the checking thread:
 * its snapshot copies, allocations and syncs are "unsafe" calls that would
 * otherwise invalidate another thread's global-mode capture. Returns 1 when
 * the mode was changed (*saved then holds the previous one). */
int kc_capture_mode_relax(CUstreamCaptureMode *saved);
void kc_capture_mode_restore(CUstreamCaptureMode saved);

#endif
