/* libkcheck/capture/policy.c — launch selection. Signatures live in a hash table;
 * every reason not to check is reported once per signature (skip record)
 * and counted. Sampling is seeded, so a run can be replayed. */
#include "policy.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "../../include/kcheck.h"
#include "export.h"
#include "log.h"
#include "options.h"
#include "report.h"
#include "serving.h"

/* Clean checks per kernel, for kernel_clean_limit; and checks of it refused
 * for device memory (kc_policy_refused). */
struct kernel_rec {
  int id;
  long clean, refused;
  unsigned reasons_seen; /* reasons reported once per kernel (R_KERNEL) */
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

/* Kernels checked clean kernel_clean_limit times, or refused for device
 * memory that many times, a bit per id, read without the lock by the
 * prefilter: set once, never cleared. refused_ids: those that got there by
 * refusals (the skip record's reason; the prefilter reads saturated only). */
#define SATURATED_IDS 65536
static _Atomic uint64_t saturated[SATURATED_IDS / 64], announced[SATURATED_IDS / 64];
static _Atomic uint64_t refused_ids[SATURATED_IDS / 64];

static int bit_of(_Atomic uint64_t *set, int id) {
  return id >= 0 && id < SATURATED_IDS &&
         (atomic_load_explicit(&set[id / 64], memory_order_relaxed) >> (id % 64) & 1);
}

static int saturated_id(int id) { return bit_of(saturated, id); }

static const char *const kRefusedTimes =
    "kernel's checks refused for device memory kernel_clean_limit times";

double kc_policy_uniform(uint64_t seq) {
  /* splitmix64: well-mixed, so consecutive launches sample independently. */
  /* Unsigned: seed = LONG_MAX must not overflow. */
  uint64_t z = seq + 0x9e3779b97f4a7c15ull * ((uint64_t)kc_opt.seed + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (double)(z >> 11) * 0x1.0p-53;
}

/* kcheck_checks_pause: while set, no launch is checked (the PyTorch
 * binding's timed step, whose kernels' durations must be the program's,
 * not kcheck's re-runs). Process-wide: the step's backward runs on
 * autograd's threads. */
static atomic_int paused;

KC_EXPORT void kcheck_checks_pause(int on) { atomic_store(&paused, on != 0); }

const char *kc_policy_prefilter(const struct kc_kernel *k, uint64_t seq) {
  if (atomic_load_explicit(&paused, memory_order_relaxed)) return "checks paused";
  if (k->communication) return "communication kernel (never re-run)";
  if (!k->eligible) return "kernel filtered by kernel_include/kernel_exclude";
  if (seq < (uint64_t)kc_opt.launch_skip) return "before launch_skip";
  if (kc_opt.launch_count >= 0 && seq >= (uint64_t)(kc_opt.launch_skip + kc_opt.launch_count))
    return "after launch_count";
  if (kc_opt.max_checks >= 0 && atomic_load(&kc_count.checks) >= kc_opt.max_checks)
    return "max_checks reached";
  if (kc_opt.time_budget < 1.0 && kc_opt.budget_window > 0) {
    const char *spent = kc_budget_spent_fast();
    if (spent) return spent;
  }
  /* A kernel checked clean (or refused for device memory)
   * kernel_clean_limit times: kc_policy_decide turns away every launch of
   * it that the seeded draw does not sample, whatever its signature (a new
   * one: kernel_saturated; a known one past check_first: the sample), so
   * such a launch needs no capture, hash or lock. A service's steady state
   * is mostly these. The first one goes on to kc_policy_decide all the
   * same, which writes the kernel's skip record (once per kernel). */
  if (kc_opt.kernel_clean_limit >= 0 && saturated_id(k->id) &&
      kc_policy_uniform(seq) >= kc_opt.sample) {
    uint64_t bit = 1ull << (k->id % 64);
    if (!(atomic_fetch_or_explicit(&announced[k->id / 64], bit, memory_order_relaxed) & bit))
      return NULL;
    return bit_of(refused_ids, k->id)
               ? "not sampled (kernel's checks refused for device memory "
                 "kernel_clean_limit times)"
               : "not sampled (kernel already checked clean kernel_clean_limit times)";
  }
  return NULL;
}

/* Zeroes the address-like 8-byte-aligned words of copy[from, to). */
static void zero_addr_words(unsigned char *copy, size_t from, size_t to) {
  for (size_t off = (from + 7) & ~(size_t)7; off + 8 <= to; off += 8) {
    uint64_t w;
    memcpy(&w, copy + off, 8);
    if (kc_addr_like(w)) memset(copy + off, 0, 8);
  }
}

uint64_t kc_policy_signature(const struct kc_launch_info *li) {
  /* One contiguous buffer, hashed at once (the same value as streaming the
   * parts): kernel, grid, block, shared memory, then the parameter bytes.
   * Addresses change from launch to launch; shapes and flags do not.
   * Resolved pointers and any other address-like word are left out:
   * parameter structs carry unused slots with stale stack bytes, which would
   * make every launch a new signature. Where the layout is known, only
   * 8-byte parameters and words inside larger (struct) parameters can be
   * addresses: two 4-byte scalars side by side (a float and a count) often
   * look like one, and stay in. Shapes beyond 2^32 are rare. */
  enum { HEAD = sizeof(int) + 7 * sizeof(unsigned) };
  unsigned char stackbuf[HEAD + 4096];
  size_t psize = li->param_buf ? li->param_size : 0;
  unsigned char *buf = HEAD + psize <= sizeof stackbuf ? stackbuf : malloc(HEAD + psize);
  if (!buf) {
    buf = stackbuf;
    psize = 0;
  }
  unsigned char *h = buf;
  memcpy(h, &li->k->id, sizeof li->k->id), h += sizeof li->k->id;
  memcpy(h, li->grid, sizeof li->grid), h += sizeof li->grid;
  memcpy(h, li->block, sizeof li->block), h += sizeof li->block;
  memcpy(h, &li->shmem, sizeof li->shmem);
  unsigned char *copy = buf + HEAD;
  if (psize) {
    memcpy(copy, li->param_buf, psize);
    for (int i = 0; i < li->nptrs; i++)
      memset(copy + li->ptrs[i].offset, 0, 8);
    const struct kc_kernel *k = li->k;
    if (li->param_form && !strcmp(li->param_form, "params") && k->nparams > 0) {
      for (int i = 0; i < k->nparams; i++) {
        size_t off = k->param_offset[i], end = off + k->param_size[i];
        if (end > psize) end = psize;
        if (k->param_size[i] >= 8) zero_addr_words(copy, off, end);
      }
    } else {
      zero_addr_words(copy, 0, psize);
    }
  }
  uint64_t sig = XXH3_64bits(buf, HEAD + psize);
  if (buf != stackbuf) free(buf);
  return sig;
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

/* A kernel checked clean kernel_clean_limit times: its new signatures are
 * only sampled. Per-step scalars (an optimizer's step count, a learning-rate
 * schedule) make a new signature at every step, so such a launch neither
 * enters the signature table nor reports a skip of its own: one skip record
 * per kernel says why its later signatures go unchecked. The same for a
 * kernel whose checks were refused for device memory (mem_budget,
 * device_mem_budget, free memory) that many times (an
 * optimizer's multi-tensor kernel reaches every parameter and state: each
 * step's new signature was a refused check, its pointers resolved under
 * the world lock and a skip record written, a few ms a step). The reason,
 * or NULL. */
static const char *kernel_saturated(struct kernel_rec *k, uint64_t seq) {
  /* Op ids (gates/op_check.c) are negative: their limit is op_clean_limit. */
  long limit = k && k->id < 0 ? kc_opt.op_clean_limit : kc_opt.kernel_clean_limit;
  if (!k || limit < 0 || (k->clean < limit && k->refused < limit) ||
      kc_policy_uniform(seq) < kc_opt.sample)
    return NULL;
  if (k->clean >= limit)
    return k->id < 0 ? "op already checked clean op_clean_limit times"
                     : "kernel already checked clean kernel_clean_limit times";
  return kRefusedTimes;
}

const char *kc_policy_decide(uint64_t sig, int kernel_id, uint64_t seq, int *first_time) {
  const char *why = NULL;
  unsigned bit = 0;
  pthread_mutex_lock(&lock);
  struct sig_rec *r = NULL;
  HASH_FIND(hh, sigs, &sig, sizeof sig, r);
  if (!r || r->checks < kc_opt.check_first) {
    struct kernel_rec *k = kernel_rec(kernel_id);
    const char *saturated_why = kernel_saturated(k, seq);
    if (saturated_why) {
      *first_time = !(k->reasons_seen & R_KERNEL);
      k->reasons_seen |= R_KERNEL;
      if (r) r->launches++;
      pthread_mutex_unlock(&lock);
      return saturated_why;
    }
  }
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
  const char *budget = kc_budget_exhausted(check_seconds);
  if (budget)
    why = budget, bit = R_TIME;
  else if (r->checks < kc_opt.check_first)
    ; /* checked */
  else if (kc_opt.clean_limit >= 0 && r->clean >= kc_opt.clean_limit)
    why = "signature already checked clean clean_limit times", bit = R_CLEAN;
  else if (kc_policy_uniform(seq) >= kc_opt.sample)
    why = "not sampled", bit = R_SAMPLE;
  if (!why) r->checks++;
  KC_ASSERT(r->checks <= r->launches); /* a launch is checked at most once */
  *first_time = why && !(r->reasons_seen & bit);
  if (why) r->reasons_seen |= bit;
  pthread_mutex_unlock(&lock);
  return why;
}

long kc_policy_checks_of(uint64_t sig) {
  pthread_mutex_lock(&lock);
  struct sig_rec *r = NULL;
  HASH_FIND(hh, sigs, &sig, sizeof sig, r);
  long n = r ? r->checks : 0;
  pthread_mutex_unlock(&lock);
  return n;
}

void kc_policy_record(uint64_t sig, int kernel_id, int clean, double seconds) {
  pthread_mutex_lock(&lock);
  struct sig_rec *r = NULL;
  HASH_FIND(hh, sigs, &sig, sizeof sig, r);
  if (r && clean) r->clean++;
  struct kernel_rec *k = clean ? kernel_rec(kernel_id) : NULL;
  if (k) k->clean++;
  if (k && kc_opt.kernel_clean_limit >= 0 && k->clean >= kc_opt.kernel_clean_limit && k->id >= 0 &&
      k->id < SATURATED_IDS)
    atomic_fetch_or_explicit(&saturated[k->id / 64], 1ull << (k->id % 64), memory_order_relaxed);
  check_seconds += seconds;
  pthread_mutex_unlock(&lock);
}

void kc_policy_refused(int kernel_id) {
  pthread_mutex_lock(&lock);
  struct kernel_rec *k = kernel_rec(kernel_id);
  if (k) k->refused++;
  if (k && kc_opt.kernel_clean_limit >= 0 && k->refused >= kc_opt.kernel_clean_limit &&
      k->id >= 0 && k->id < SATURATED_IDS) {
    atomic_fetch_or_explicit(&refused_ids[k->id / 64], 1ull << (k->id % 64), memory_order_relaxed);
    atomic_fetch_or_explicit(&saturated[k->id / 64], 1ull << (k->id % 64), memory_order_relaxed);
  }
  pthread_mutex_unlock(&lock);
}

double kc_policy_check_seconds(void) {
  pthread_mutex_lock(&lock);
  double s = check_seconds;
  pthread_mutex_unlock(&lock);
  return s;
}
