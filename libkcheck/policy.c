/* libkcheck/policy.c — launch selection. Signatures live in a hash table;
 * every reason not to check is reported once per signature (skip record)
 * and counted. Sampling is seeded, so a run can be replayed. */
#include "policy.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "options.h"
#include "report.h"

/* Clean checks per kernel, for kernel_clean_limit. */
struct kernel_rec {
  int id;
  long clean;
  UT_hash_handle hh;
};
static struct kernel_rec *kernels;

struct sig_rec {
  uint64_t sig;
  long launches, checks, clean;
  unsigned reasons_seen; /* bit per reason already reported */
  UT_hash_handle hh;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct sig_rec *sigs;
static double check_seconds;

double kc_policy_uniform(uint64_t seq) {
  /* splitmix64: well-mixed, so consecutive launches sample independently. */
  /* Unsigned: seed = LONG_MAX must not overflow. */
  uint64_t z = seq + 0x9e3779b97f4a7c15ull * ((uint64_t)kc_opt.seed + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (double)(z >> 11) * 0x1.0p-53;
}

const char *kc_policy_prefilter(const struct kc_kernel *k, uint64_t seq) {
  if (k->communication) return "communication kernel (never re-run)";
  if (!k->eligible) return "kernel filtered by kernel_include/kernel_exclude";
  if (seq < (uint64_t)kc_opt.launch_skip) return "before launch_skip";
  if (kc_opt.launch_count >= 0 && seq >= (uint64_t)(kc_opt.launch_skip + kc_opt.launch_count))
    return "after launch_count";
  if (kc_opt.max_checks >= 0 && atomic_load(&kc_count.checks) >= kc_opt.max_checks)
    return "max_checks reached";
  return NULL;
}

uint64_t kc_policy_signature(const struct kc_launch_info *li) {
  XXH3_state_t st;
  XXH3_64bits_reset(&st);
  XXH3_64bits_update(&st, &li->k->id, sizeof li->k->id);
  XXH3_64bits_update(&st, li->grid, sizeof li->grid);
  XXH3_64bits_update(&st, li->block, sizeof li->block);
  XXH3_64bits_update(&st, &li->shmem, sizeof li->shmem);
  /* Addresses change from launch to launch; shapes and flags do not.
   * Resolved pointers and any other address-like word are left out:
   * parameter structs carry unused slots with stale stack bytes, which would
   * make every launch a new signature. Shapes beyond 2^32 are rare. */
  unsigned char stackbuf[4096];
  unsigned char *copy = li->param_size <= sizeof stackbuf ? stackbuf : malloc(li->param_size);
  if (li->param_buf && li->param_size && copy) {
    memcpy(copy, li->param_buf, li->param_size);
    for (int i = 0; i < li->nptrs; i++)
      memset(copy + li->ptrs[i].offset, 0, 8);
    for (size_t off = 0; off + 8 <= li->param_size; off += 8) {
      uint64_t w;
      memcpy(&w, copy + off, 8);
      if (kc_addr_like(w)) memset(copy + off, 0, 8);
    }
    XXH3_64bits_update(&st, copy, li->param_size);
  }
  if (copy != stackbuf) free(copy);
  return XXH3_64bits_digest(&st);
}

enum { R_CLEAN = 1, R_SAMPLE = 2, R_TIME = 4, R_KERNEL = 8 };

static struct kernel_rec *kernel_rec(int id) {
  struct kernel_rec *k = NULL;
  HASH_FIND_INT(kernels, &id, k);
  if (!k && (k = calloc(1, sizeof *k))) {
    k->id = id;
    HASH_ADD_INT(kernels, id, k);
  }
  return k;
}

const char *kc_policy_decide(uint64_t sig, int kernel_id, uint64_t seq, int *first_time) {
  const char *why = NULL;
  unsigned bit = 0;
  pthread_mutex_lock(&lock);
  struct sig_rec *r = NULL;
  HASH_FIND(hh, sigs, &sig, sizeof sig, r);
  if (!r && (r = calloc(1, sizeof *r))) {
    r->sig = sig;
    HASH_ADD(hh, sigs, sig, sizeof r->sig, r);
  }
  if (!r) {
    pthread_mutex_unlock(&lock);
    *first_time = 1;
    return "out of memory in the signature table";
  }
  r->launches++;
  double wall = kc_now_s();
  if (kc_opt.time_budget < 1.0 && wall > 0 && check_seconds > kc_opt.time_budget * wall)
    why = "time_budget exhausted", bit = R_TIME;
  else if (r->checks < kc_opt.check_first) {
    /* A kernel that came out clean under many signatures (per-step scalars
     * make new ones) is only sampled from then on. */
    struct kernel_rec *k = kernel_rec(kernel_id);
    if (k && kc_opt.kernel_clean_limit >= 0 && k->clean >= kc_opt.kernel_clean_limit &&
        kc_policy_uniform(seq) >= kc_opt.sample)
      why = "kernel already checked clean kernel_clean_limit times", bit = R_KERNEL;
  } else if (kc_opt.clean_limit >= 0 && r->clean >= kc_opt.clean_limit)
    why = "signature already checked clean clean_limit times", bit = R_CLEAN;
  else if (kc_policy_uniform(seq) >= kc_opt.sample)
    why = "not sampled", bit = R_SAMPLE;
  if (!why) r->checks++;
  *first_time = why && !(r->reasons_seen & bit);
  if (why) r->reasons_seen |= bit;
  pthread_mutex_unlock(&lock);
  return why;
}

void kc_policy_record(uint64_t sig, int kernel_id, int clean, double seconds) {
  pthread_mutex_lock(&lock);
  struct sig_rec *r = NULL;
  HASH_FIND(hh, sigs, &sig, sizeof sig, r);
  if (r && clean) r->clean++;
  struct kernel_rec *k = clean ? kernel_rec(kernel_id) : NULL;
  if (k) k->clean++;
  check_seconds += seconds;
  pthread_mutex_unlock(&lock);
}

double kc_policy_check_seconds(void) {
  pthread_mutex_lock(&lock);
  double s = check_seconds;
  pthread_mutex_unlock(&lock);
  return s;
}
