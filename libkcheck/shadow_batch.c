/* libkcheck/shadow_batch.c — a gate's re-runs queued back to back. Run by
 * run, each re-run waits for its restore, its kernel and its comparison
 * before the next is queued, and the device idles through every round
 * trip; queued together they cost one wait. Each run's comparison goes to
 * slots of its own, and kc_capture_first keeps the first differing word of
 * each region, since the next run overwrites the memory before the host
 * reads anything. Only what the application's launch changed is restored
 * before each run; a run that changed an allocation the launch left
 * unchanged (an input) leaves the later runs' starting state wrong, so
 * their results are marked invalid and the caller makes them again alone. */
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "options.h"
#include "perturb.h"
#include "prof.h"
#include "shadow.h"

int kc_shadow_batchable(const struct kc_perturb *p) {
  return !p->intra && !p->green_sms && !p->extra_shmem && !p->hammer && !p->npoison;
}

static int usable(const struct kc_shadow *s, const struct kc_perturb *ps, int n) {
  if (!kc_opt.batch_runs || n < 1 || n > KC_BATCH_MAX || s->have_hash || !s->have_post ||
      !s->nregions || s->run_pending || !kc_drv.cuMemcpyHtoDAsync_v2 ||
      !kc_drv.cuMemcpyDtoHAsync_v2)
    return 0;
  for (int i = 0; i < s->nregions; i++)
    if (s->regions[i].size % 4) return 0; /* tails are compared on the host */
  for (int j = 0; j < n; j++)
    if (!kc_shadow_batchable(&ps[j])) return 0;
  return kc_perturb_can_enqueue();
}

/* Queues run p: restore, perturbation kernels, the kernel, its comparison
 * into res/cap. 0, 1 (p does not apply: *why), -1 (failed: *why). */
static int queue_run(struct kc_shadow *s, const struct kc_perturb *p, const CUdeviceptr *a,
                     const CUdeviceptr *b, const uint64_t *w, CUdeviceptr res, CUdeviceptr cap,
                     const char **why) {
  struct kc_launch_info *li = s->li;
  uint64_t t = kc_prof_now();
  if (kc_perturb_inapplicable(p, li, why)) return 1;
  for (int i = 0; i < s->nregions; i++) {
    struct kc_region *r = &s->regions[i];
    if (!r->dirty_pre) continue;
    if (kc_shadow_copy(r->base, r->pre, r->size, s->stream) != CUDA_SUCCESS) {
      *why = "restoring the pre-state failed";
      return -1;
    }
    s->copied_back += r->size;
    r->dirty_pre = 0;
    r->dirty_post = r->changed;
  }
  t = kc_prof_lap(KC_PS_chk_restore, t);
  CUstream stream = s->stream;
  unsigned shmem = li->shmem;
  CUfunction fn = li->args->f;
  int rc = kc_perturb_before(p, li, &stream, &shmem, &fn, why);
  t = kc_prof_lap(KC_PS_chk_perturb, t);
  if (rc) return rc;
  if (stream != s->stream) { /* kc_shadow_batchable rules this out */
    kc_perturb_after(p, li);
    *why = "a batched run left the check's stream";
    return -1;
  }
  CUresult lr = kc_shadow_relaunch(li, stream, shmem, fn);
  kc_perturb_after(p, li);
  t = kc_prof_lap(KC_PS_chk_run, t);
  if (lr != CUDA_SUCCESS) {
    *why = "the shadow launch failed";
    return -1;
  }
  s->runs++;
  /* What the launch changes differs from the pre-state again; inputs are
   * taken to be untouched until the comparisons say otherwise. */
  for (int i = 0; i < s->nregions; i++) {
    s->regions[i].dirty_pre = s->regions[i].changed;
    s->regions[i].dirty_post = 1;
  }
  rc = kc_perturb_compare_enqueue(a, b, w, s->nregions, res, cap, s->stream);
  kc_prof_lap(KC_PS_chk_compare, t);
  if (rc) *why = "comparing the results failed";
  return rc ? -1 : 0;
}

/* Run j's comparison from its slots; 1 when it found a difference in an
 * allocation the application's launch left unchanged. */
static int read_run(struct kc_shadow *s, const uint64_t *res, const uint32_t *cap,
                    struct kc_diff *d) {
  int input_changed = 0;
  memset(d, 0, sizeof *d);
  d->region = -1;
  for (int i = 0; i < s->nregions; i++) {
    uint64_t count = res[2 * i], first = res[2 * i + 1];
    if (!count) continue;
    input_changed |= !s->regions[i].changed;
    d->words += count;
    if (d->region >= 0) continue;
    d->region = i;
    d->offset = 4 * first;
    d->nbytes = 4;
    memcpy(d->got, &cap[2 * i], 4);          /* the memory (a) */
    memcpy(d->expected, &cap[2 * i + 1], 4); /* post-state A (b) */
  }
  return input_changed;
}

int kc_shadow_batch(struct kc_shadow *s, const struct kc_perturb *ps, int n,
                    struct kc_batch_run *out, const char **why) {
  if (!usable(s, ps, n)) return 1;
  int nr = s->nregions, rc = -1;
  CUdeviceptr res0 = s->slots + 16u * (uint64_t)nr;
  CUdeviceptr cap0 = res0 + 16u * (uint64_t)nr * KC_BATCH_MAX;
  CUdeviceptr *a = malloc(sizeof *a * (size_t)nr), *b = malloc(sizeof *b * (size_t)nr);
  uint64_t *w = malloc(sizeof *w * (size_t)nr);
  uint64_t *res = malloc(16u * (size_t)nr * (size_t)n);
  uint32_t *cap = calloc(2u * (size_t)nr * (size_t)n, sizeof *cap);
  *why = "out of host memory";
  if (!a || !b || !w || !res || !cap) goto done;
  for (int i = 0; i < nr; i++) {
    a[i] = s->regions[i].base;
    b[i] = s->regions[i].post; /* the pre-state where the launch changed nothing */
    w[i] = s->regions[i].size / 4;
  }
  for (int k = 0; k < nr * n; k++)
    res[2 * k] = 0, res[2 * k + 1] = ~0ull;
  *why = "comparing the results failed";
  if (kc_drv.cuMemcpyHtoDAsync_v2(res0, res, 16u * (size_t)nr * (size_t)n, s->stream) !=
      CUDA_SUCCESS)
    goto done;
  int last = -1;
  for (int j = 0; j < n; j++) {
    memset(&out[j], 0, sizeof out[j]);
    const char *rwhy = NULL;
    int q = queue_run(s, &ps[j], a, b, w, res0 + 16u * (uint64_t)nr * (uint64_t)j,
                      cap0 + 8u * (uint64_t)nr * (uint64_t)j, &rwhy);
    if (q < 0) {
      *why = rwhy;
      goto done;
    }
    out[j].made = q == 0;
    out[j].why = rwhy;
    if (q == 0) last = j;
  }
  uint64_t t = kc_prof_now();
  if (kc_drv.cuMemcpyDtoHAsync_v2(res, res0, 16u * (size_t)nr * (size_t)n, s->stream) !=
          CUDA_SUCCESS ||
      kc_drv.cuMemcpyDtoHAsync_v2(cap, cap0, 8u * (size_t)nr * (size_t)n, s->stream) !=
          CUDA_SUCCESS ||
      kc_shadow_stream_sync(s->stream) != CUDA_SUCCESS) {
    /* the runs' wait is the comparisons': a fault there is a run's */
    if (last >= 0) s->run_faulted = 1;
    *why = last >= 0 ? "the shadow run faulted" : "comparing the results failed";
    goto done;
  }
  kc_prof_lap(KC_PS_chk_compare, t);
  int valid = 1;
  for (int j = 0; j < n; j++) {
    if (!out[j].made) continue;
    out[j].valid = valid;
    if (read_run(s, res + 2u * (size_t)nr * (size_t)j, cap + 2u * (size_t)nr * (size_t)j,
                 &out[j].d))
      valid = 0;
  }
  if (last >= 0 && out[last].valid) {
    const uint64_t *rl = res + 2u * (size_t)nr * (size_t)last;
    for (int i = 0; i < nr; i++) {
      struct kc_region *r = &s->regions[i];
      r->dirty_post = rl[2 * i] != 0;
      r->dirty_pre = rl[2 * i] != 0 || r->changed;
    }
  } else if (last >= 0) {
    kc_shadow_all_unknown(s);
  }
  rc = 0;
done:
  if (rc) kc_shadow_all_unknown(s);
  free(a);
  free(b);
  free(w);
  free(res);
  free(cap);
  return rc;
}
