/* libkcheck/exec/perturb.h — the mechanisms behind timing perturbations: kcheck's
 * own kernels (shared-memory scrub, memory hammer, L2 flush), green
 * contexts with few SMs, extra dynamic shared memory. Per device, created
 * on first use, freed at exit. All calls run under the guard. */
#ifndef KC_PERTURB_H
#define KC_PERTURB_H

#include <cuda.h>

#include "shadow.h"

/* Prepares the run: may change *stream (green context), *shmem and *fn
 * (the intra-block strategies' perturbed copy), and launches helper
 * kernels. Returns 0, 1 (not applicable, *why) or -1. */
int kc_perturb_before(const struct kc_perturb *p, struct kc_launch_info *li, CUstream *stream,
                      unsigned *shmem, CUfunction *fn, const char **why);
/* Undoes what _before changed (function attributes); waits for helpers. */
void kc_perturb_after(const struct kc_perturb *p, struct kc_launch_info *li);
/* Device-side comparison of two buffers with kcheck's kc_compare kernel:
 * *count differing 32-bit words, *first the first one's index. -1 when the
 * kernel is unavailable (the caller compares on the host). */
int kc_perturb_compare(CUdeviceptr a, CUdeviceptr b, uint64_t words, uint64_t *count,
                       uint64_t *first);
/* The same for n pairs at once, on `stream`: out[2i] the count and
 * out[2i+1] the first index of pair i. As few launches as the table
 * allows and one copy back for all (`slots`: 16 bytes per pair of device
 * memory, 32 with hout). With hout, also the hash of each a[i]
 * (kc_perturb_hash_many's, seeded with seed) into hout[2i], hout[2i+1], in
 * the same pass; a pair whose a and b are the same buffer is then hashed,
 * not skipped. -1 when the kernel is unavailable or a call failed. */
int kc_perturb_compare_many(const CUdeviceptr *a, const CUdeviceptr *b, const uint64_t *words,
                            int n, CUdeviceptr slots, CUstream stream, uint64_t *out, uint64_t seed,
                            uint64_t *hout);
/* 1 when p cannot change this launch's run (*why says why): the scrub of
 * shared memory for a kernel that has none. Such a run is not made. */
int kc_perturb_inapplicable(const struct kc_perturb *p, const struct kc_launch_info *li,
                            const char **why);
/* Hashes of n device buffers of words[i] 32-bit words with kcheck's
 * kc_hash_table, on `stream` (`slots`: 16 bytes a buffer of device
 * memory): out[2i], out[2i+1] the two 64-bit lanes of a keyed NH hash
 * (kernels/region_hash.h) seeded with seed. Equal contents give equal
 * hashes; different contents the same one with probability about 2^-64
 * for a seed drawn at random: a missed difference, never an invented one,
 * since only a differing hash leads to a word-by-word comparison. One
 * read of each buffer where a comparison reads two. zeroed: the slots
 * hold zeros already (else a memset on `stream` zeroes them first). -1
 * when the kernel is unavailable or a call failed (the caller compares
 * instead). */
int kc_perturb_hash_many(const CUdeviceptr *a, const uint64_t *words, int n, uint64_t seed,
                         CUdeviceptr slots, int zeroed, CUstream stream, uint64_t *out);
/* Saves the pre-state and hashes it in one pass: b[i] = a[i] over
 * words[i] words for each of n regions, and the hash of each (seeded, as
 * kc_perturb_hash_many's) into the 16-byte slots at `slots`, queued on
 * `stream` without a wait. 0 when queued; -1 when the kernel is
 * unavailable or a call failed (then nothing may have been copied: the
 * caller copies and compares instead). */
int kc_perturb_copy_hash_queue(const CUdeviceptr *a, const CUdeviceptr *b, const uint64_t *words,
                               int n, uint64_t seed, CUdeviceptr slots, int zeroed, CUstream stream,
                               int *published);
/* kcheck's one-time device setup in the current context, before its first
 * check there: its kernels loaded, the publishing hashes' buffers made and
 * host memory mapped for them, with l2flush the L2 flush's buffer, the
 * checks' staging buffer reserved (staging_reserve) and the floor's device
 * costs (kc_perturb_device_costs) measured on stream.
 * Returns the milliseconds it took, 0 when done before (each part is
 * otherwise made where first needed). */
double kc_perturb_setup(int l2flush, CUstream stream);
/* 1 when the hashes of n regions will publish their sums (hash_publish,
 * host memory mapped for the device): they then use zeroed slots of their
 * own, and the caller's need no memset. */
int kc_perturb_publishes(int n);
/* After kc_perturb_copy_hash_queue with the same slots and seed (and the
 * *published it gave): hashes each a[i] now into slots + 16n, reads both
 * back and waits: out[2i], out[2i+1] the saved copy's hash, out[2n + 2i],
 * out[2n + 2i + 1] the hash now. -1 as kc_perturb_hash_many. */
int kc_perturb_hash_after_copy(const CUdeviceptr *a, const uint64_t *words, int n, uint64_t seed,
                               CUdeviceptr slots, int zeroed, int published, CUstream stream,
                               uint64_t *out);
/* The device's costs for a check's floor, measured once per device on
 * stream s (the device idle): milliseconds per byte of a device-to-device
 * copy and the round trip of a launch and its wait. -1 when unmeasured. */
int kc_perturb_device_costs(CUstream s, double *copy_ms_per_byte, double *sync_ms);
/* {form: fatbin|ptx|failed|not loaded, load_ms, copy_gbps, sync_us}: how
 * kcheck's kernels were loaded and the measured costs, for the summary. */
struct json_t *kc_perturb_summary_json(void);
void kc_perturb_fini(void);

/* The strategies of perturb.def: KC_STRAT_<name>. */
enum kc_strategy {
#define KC_PERTURB(name, on, cost, desc) KC_STRAT_##name,
#include "perturb.def"
  KC_STRAT_COUNT
};
enum kc_strategy_cost { KC_COST_CHEAP, KC_COST_MODERATE, KC_COST_COSTLY };
struct kc_strategy_info {
  const char *name;
  int default_on; /* in the default race_strategies */
  enum kc_strategy_cost cost;
  const char *description;
};
/* The row of s; NULL past the table. */
const struct kc_strategy_info *kc_strategy_info(enum kc_strategy s);
/* The strategy named name; -1 when none is. */
int kc_strategy_find(const char *name);
/* The green strategy's SM count for li: green_sms, or a quarter of the
 * device's SMs (in groups of 8) where li's grid would need more than 4 x
 * the waves of the application's run on green_sms SMs. A GEMM of a few
 * hundred tiles runs about 16 x longer on 8 of an H100's 132 SMs, the
 * costliest run of a first check; on 32 it still runs fewer blocks at a
 * time and in another order than the application's run did. */
int kc_perturb_green_sms(const struct kc_launch_info *li, int green_sms);
/* p for one run of strategy s; green_sms and extra_shmem are the green and
 * smem strategies' parameters. */
void kc_strategy_perturb(enum kc_strategy s, int green_sms, unsigned extra_shmem, uint64_t seed,
                         struct kc_perturb *p);

#endif
