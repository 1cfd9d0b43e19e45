/* libkcheck/capture/capture.c — launch capture: configuration, packed parameter
 * bytes (kernelParams or the `extra` buffer), launch attributes, and device
 * pointers found by scanning the parameter bytes. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "allocmap.h"
#include "driver.h"
#include "launch.h"
#include "log.h"

#include "own.h"
#include "prof.h"
#include "report.h"
#include "stack.h"

static void copy_config(struct kc_launch_info *li, const struct kc_launch_args *a) {
  if (a->entry == KC_LE_KERNEL_EX && a->config) {
    const CUlaunchConfig *c = a->config;
    li->grid[0] = c->gridDimX, li->grid[1] = c->gridDimY, li->grid[2] = c->gridDimZ;
    li->block[0] = c->blockDimX, li->block[1] = c->blockDimY, li->block[2] = c->blockDimZ;
    li->shmem = c->sharedMemBytes;
    li->stream = c->hStream;
    unsigned n = c->numAttrs < KC_MAX_ATTRS ? c->numAttrs : KC_MAX_ATTRS;
    if (c->attrs && n) memcpy(li->attrs, c->attrs, n * sizeof *li->attrs);
    li->nattrs = c->attrs ? (int)n : 0;
  } else {
    memcpy(li->grid, a->grid, sizeof li->grid);
    memcpy(li->block, a->block, sizeof li->block);
    li->shmem = a->shmem;
    li->stream = a->stream;
  }
}

/* The `extra` form: CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE pairs. */
static int pack_extra(struct kc_launch_info *li, void **extra) {
  void *buf = NULL;
  size_t size = 0;
  int have_size = 0;
  for (int i = 0; i < 64 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
      buf = extra[i + 1];
    else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1]) {
      memcpy(&size, extra[i + 1], sizeof size);
      have_size = 1;
    }
  }
  if (!buf || !have_size) return -1;
  li->param_buf = malloc(size ? size : 1);
  if (!li->param_buf) return -1;
  memcpy(li->param_buf, buf, size);
  li->param_size = size;
  li->param_form = "extra";
  return 0;
}

static int pack_params(struct kc_launch_info *li, void **params) {
  struct kc_kernel *k = li->k;
  if (k->nparams < 0) {
    li->param_form = "unknown";
    return 0;
  }
  li->param_size = k->param_bytes;
  if (li->inline_buf && k->param_bytes <= li->inline_cap) {
    li->param_buf = li->inline_buf;
    memset(li->param_buf, 0, k->param_bytes); /* gaps between parameters */
  } else {
    li->param_buf = calloc(1, k->param_bytes ? k->param_bytes : 1);
  }
  if (!li->param_buf) return -1;
  for (int i = 0; i < k->nparams; i++)
    if (params && params[i])
      memcpy(li->param_buf + k->param_offset[i], params[i], k->param_size[i]);
  li->param_form = k->nparams ? "params" : "none";
  return 0;
}

int kc_capture(struct kc_launch_info *li, struct kc_kernel *k, const struct kc_launch_args *a) {
  li->k = k;
  li->args = a;
  copy_config(li, a);
  kc_kernel_refresh_layout(k);
  void **extra = a->extra;
  if (extra && a->params == NULL) return pack_extra(li, extra);
  return pack_params(li, a->params);
}

/* Words the driver said are in no allocation, for trace records: parameter
 * structs carry the same stale stack and heap words launch after launch, and
 * each driver query costs microseconds. PyTorch's multi-tensor structs hold
 * hundreds of int pairs (block_to_chunk) that look like addresses: a
 * direct-mapped table of this size lost ~23% of 4000 distinct ones to
 * collisions every round (test_capture.py), so it is set-associative
 * (NOT_DEVICE_WAYS entries a set, a stale or empty one replaced first). Racy
 * by design (a lost or torn entry only costs a query). Never consulted for
 * checks. An entry holds the word (below 2^47, kc_addr_like) and, above it,
 * the allocation map's epoch when the driver was asked: any allocation,
 * free or VMM (un)map since makes the entry stale, so an address that
 * becomes device memory is asked about again. */
#define NOT_DEVICE_WAYS 4
#define NOT_DEVICE_SETS 8192
#define NOT_DEVICE_TAG_SHIFT 47
static _Atomic uint64_t not_device[NOT_DEVICE_SETS * NOT_DEVICE_WAYS];

static _Atomic uint64_t *not_device_set(uint64_t w) {
  uint64_t h = (w * 0x9e3779b97f4a7c15ull) >> 40;
  return &not_device[(h & (NOT_DEVICE_SETS - 1)) * NOT_DEVICE_WAYS];
}

static uint64_t not_device_entry(uint64_t w, uint64_t epoch) {
  return w | (epoch << NOT_DEVICE_TAG_SHIFT);
}

static int not_device_known(uint64_t w, uint64_t epoch) {
  _Atomic uint64_t *set = not_device_set(w);
  uint64_t e = not_device_entry(w, epoch);
  for (int i = 0; i < NOT_DEVICE_WAYS; i++)
    if (atomic_load_explicit(&set[i], memory_order_relaxed) == e) return 1;
  return 0;
}

static void not_device_remember(uint64_t w, uint64_t epoch) {
  _Atomic uint64_t *set = not_device_set(w);
  uint64_t tag = not_device_entry(0, epoch);
  int victim = (int)((w >> 3) & (NOT_DEVICE_WAYS - 1));
  for (int i = 0; i < NOT_DEVICE_WAYS; i++) {
    uint64_t cur = atomic_load_explicit(&set[i], memory_order_relaxed);
    if (!cur || (cur & ~((1ull << NOT_DEVICE_TAG_SHIFT) - 1)) != tag) {
      victim = i; /* empty, or from an earlier epoch of the map */
      break;
    }
  }
  atomic_store_explicit(&set[victim], not_device_entry(w, epoch), memory_order_relaxed);
}

void kc_capture_pointers(struct kc_launch_info *li, enum kc_ptr_lookup lookup) {
  int remember_misses = lookup == KC_PTRS_REMEMBER_MISSES;
  size_t nwords = li->param_size / 8;
  if (!nwords) return;
  /* Every entry below nptrs is written whole; nothing reads past it. */
  li->ptrs = malloc(nwords * sizeof *li->ptrs);
  uint64_t wstack[512];
  struct kc_alloc astack[512];
  uint64_t *words = nwords <= 512 ? wstack : malloc(nwords * sizeof *words);
  struct kc_alloc *found = nwords <= 512 ? astack : malloc(nwords * sizeof *found);
  if (!li->ptrs || !words || !found) goto out;
  for (size_t i = 0; i < nwords; i++)
    memcpy(&words[i], li->param_buf + 8 * i, 8);
  uint64_t epoch = remember_misses ? kc_allocmap_epoch() : 0;
  kc_allocmap_find_many(words, nwords, found);
  uint64_t looked = 0, in_map = 0, by_driver = 0, not_dev = 0, remembered = 0;
  for (size_t i = 0; i < nwords; i++) {
    uint64_t w = words[i];
    /* Small integers (sizes, strides, flags) are never device addresses. */
    if (w < 0x10000) continue;
    looked++;
    struct kc_ptr *p = &li->ptrs[li->nptrs];
    if (found[i].size) {
      *p = (struct kc_ptr){(uint32_t)(8 * i), w, found[i].base, found[i].size, 0};
      li->nptrs++;
      in_map++;
      continue;
    }
    /* Fallback for memory allocated before kcheck was loaded or through an
     * entry it does not hook: a driver query, so only for words that look
     * like addresses (a parameter struct holds many that do not). */
    CUdeviceptr base = 0;
    size_t size = 0;
    if (lookup == KC_PTRS_MAP_ONLY || !kc_addr_like(w) || !kc_drv.cuMemGetAddressRange_v2) continue;
    if (remember_misses && not_device_known(w, epoch)) {
      remembered++;
      continue;
    }
    KC_PROF_CALL(cuMemGetAddressRange_v2);
    if (kc_drv.cuMemGetAddressRange_v2(&base, &size, (CUdeviceptr)w) == CUDA_SUCCESS && size) {
      if (kc_own_contains(base)) continue;
      *p = (struct kc_ptr){(uint32_t)(8 * i), w, base, size, 1};
      li->nptrs++;
      by_driver++;
    } else {
      not_dev++;
      /* Tagged with the epoch read before the map lookup: a change of the
       * map since then leaves this entry stale at once. */
      if (remember_misses) not_device_remember(w, epoch);
    }
  }
  kc_prof_count(KC_PC_ptr_words, looked);
  kc_prof_count(KC_PC_ptr_map, in_map);
  kc_prof_count(KC_PC_ptr_driver, by_driver);
  kc_prof_count(KC_PC_ptr_not_device, not_dev);
  kc_prof_count(KC_PC_ptr_remembered, remembered);
out:
  if (words != wstack) free(words);
  if (found != astack) free(found);
}

void kc_capture_free(struct kc_launch_info *li) {
  if (li->param_buf != li->inline_buf) free(li->param_buf);
  free(li->ptrs);
  kc_stack_unref(li->delay.stack);
  li->param_buf = NULL;
  li->ptrs = NULL;
  li->delay.stack = NULL;
}

/* ---- the launch record, formatted by hand: trace=1 writes one per launch,
 * so it must cost about a microsecond (jansson and snprintf per byte cost
 * tens). Same members as a jansson record would have. */
struct out {
  char *p, *end;
};

static void put(struct out *o, const char *s, size_t n) {
  if ((size_t)(o->end - o->p) < n) {
    o->p = o->end; /* overflow: the caller sees a full buffer */
    return;
  }
  memcpy(o->p, s, n);
  o->p += n;
}
#define PUTS(o, lit) put((o), (lit), sizeof(lit) - 1)

/* Two decimal digits a step: a record's numbers are most of its tokens. */
static const char digit_pairs[] = "00010203040506070809101112131415161718192021222324252627282930"
                                  "31323334353637383940414243444546474849505152535455565758596061"
                                  "62636465666768697071727374757677787980818283848586878889909192"
                                  "93949596979899";

/* Decimal v at d, unchecked (at most 20 characters); returns the end. */
static char *fmt_u64(char *d, uint64_t v) {
  char b[24];
  int i = sizeof b;
  while (v >= 100) {
    unsigned r = (unsigned)(v % 100);
    v /= 100;
    b[--i] = digit_pairs[2 * r + 1];
    b[--i] = digit_pairs[2 * r];
  }
  if (v >= 10) {
    b[--i] = digit_pairs[2 * v + 1];
    b[--i] = digit_pairs[2 * v];
  } else {
    b[--i] = (char)('0' + v);
  }
  memcpy(d, b + i, sizeof b - (size_t)i);
  return d + (sizeof b - (size_t)i);
}

static void put_u64(struct out *o, uint64_t v) {
  if (o->end - o->p < 20) {
    o->p = o->end;
    return;
  }
  o->p = fmt_u64(o->p, v);
}

static void put_i64(struct out *o, int64_t v) {
  if (v < 0) {
    PUTS(o, "-");
    put_u64(o, (uint64_t)0 - (uint64_t)v);
  } else {
    put_u64(o, (uint64_t)v);
  }
}

static const char hexd[] = "0123456789abcdef";

/* "0x..." (quoted) as kc_json_addr writes it, at d, unchecked (at most 20
 * characters); returns the end. */
static char *fmt_addr(char *d, uint64_t v) {
  int digits = v ? (64 - __builtin_clzll(v) + 3) / 4 : 1;
  d[0] = '"';
  d[1] = '0';
  d[2] = 'x';
  for (int i = digits - 1; i >= 0; i--, v >>= 4)
    d[3 + i] = hexd[v & 15];
  d[3 + digits] = '"';
  return d + 4 + digits;
}

static void put_addr(struct out *o, uint64_t v) {
  if (o->end - o->p < 20) {
    o->p = o->end;
    return;
  }
  o->p = fmt_addr(o->p, v);
}

#define LIT(d, lit) (memcpy((d), (lit), sizeof(lit) - 1), (d) + sizeof(lit) - 1)

/* One element of a launch record's "pointers", unchecked: at most
 * KC_PTR_TEXT_MAX characters. A multi-tensor struct holds over a hundred,
 * so this writes straight into the buffer, one bounds check a pointer. */
#define KC_PTR_TEXT_MAX 200
static char *fmt_ptr(char *d, const struct kc_ptr *p) {
  d = LIT(d, "{\"offset\":");
  d = fmt_u64(d, p->offset);
  d = LIT(d, ",\"value\":");
  d = fmt_addr(d, p->value);
  d = LIT(d, ",\"base\":");
  d = fmt_addr(d, p->base);
  d = LIT(d, ",\"alloc_size\":");
  d = fmt_u64(d, p->size);
  d = LIT(d, ",\"alloc_offset\":");
  d = fmt_u64(d, p->value - p->base);
  if (p->from_driver) return LIT(d, ",\"resolved_by\":\"driver\"}");
  return LIT(d, ",\"resolved_by\":\"map\"}");
}

/* Lower-case hex of n bytes at dst (2n characters); returns the end. A
 * trace record carries its launch's parameter bytes (up to 4 KiB, PyTorch's
 * multi-tensor structs are 3 KiB), so this runs at 16 bytes a step where
 * SSE2 is there (every x86-64). */
static char *put_hex(char *dst, const unsigned char *src, size_t n) {
  size_t i = 0;
#ifdef __SSE2__
  const __m128i mask = _mm_set1_epi8(0x0f), nine = _mm_set1_epi8(9);
  const __m128i zero = _mm_set1_epi8('0'), gap = _mm_set1_epi8('a' - '0' - 10);
  for (; i + 16 <= n; i += 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(src + i));
    __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), mask), lo = _mm_and_si128(v, mask);
    __m128i a = _mm_unpacklo_epi8(hi, lo), b = _mm_unpackhi_epi8(hi, lo);
    a = _mm_add_epi8(_mm_add_epi8(a, zero), _mm_and_si128(_mm_cmpgt_epi8(a, nine), gap));
    b = _mm_add_epi8(_mm_add_epi8(b, zero), _mm_and_si128(_mm_cmpgt_epi8(b, nine), gap));
    _mm_storeu_si128((__m128i *)(void *)(dst + 2 * i), a);
    _mm_storeu_si128((__m128i *)(void *)(dst + 2 * i + 16), b);
  }
#endif
  for (; i < n; i++) {
    dst[2 * i] = hexd[src[i] >> 4];
    dst[2 * i + 1] = hexd[src[i] & 15];
  }
  return dst + 2 * n;
}

static void put_dims(struct out *o, const unsigned d[3]) {
  PUTS(o, "[");
  put_u64(o, d[0]);
  PUTS(o, ",");
  put_u64(o, d[1]);
  PUTS(o, ",");
  put_u64(o, d[2]);
  PUTS(o, "]");
}

static size_t format_launch(const struct kc_launch_info *li, char *buf, size_t cap,
                            const char *stack_json) {
  struct out o = {buf, buf + cap};
  PUTS(&o, "{\"launch\":");
  put_u64(&o, li->seq);
  PUTS(&o, ",\"kernel\":");
  put_i64(&o, li->k->id);
  PUTS(&o, ",\"entry\":\"");
  const char *e = kc_launch_entry_names[li->args->entry];
  put(&o, e, strlen(e));
  PUTS(&o, "\",\"ptsz\":");
  if (li->args->ptsz)
    PUTS(&o, "true");
  else
    PUTS(&o, "false");
  PUTS(&o, ",\"grid\":");
  put_dims(&o, li->grid);
  PUTS(&o, ",\"block\":");
  put_dims(&o, li->block);
  PUTS(&o, ",\"shmem\":");
  put_u64(&o, li->shmem);
  PUTS(&o, ",\"stream\":");
  put_addr(&o, (uint64_t)(uintptr_t)li->stream);
  PUTS(&o, ",\"param_form\":\"");
  put(&o, li->param_form, strlen(li->param_form));
  PUTS(&o, "\",\"param_size\":");
  put_u64(&o, li->param_size);
  /* Parameter bytes as hex: small kernels' full arguments, for replay. */
  PUTS(&o, ",\"param_bytes\":");
  if (li->param_buf && li->param_size <= 4096 && (size_t)(o.end - o.p) > 2 * li->param_size + 2) {
    *o.p++ = '"';
    o.p = put_hex(o.p, li->param_buf, li->param_size);
    *o.p++ = '"';
  } else {
    PUTS(&o, "null");
  }
  PUTS(&o, ",\"pointers\":[");
  for (int i = 0; i < li->nptrs; i++) {
    if (o.end - o.p < KC_PTR_TEXT_MAX + 1) {
      o.p = o.end; /* overflow: the caller sees a full buffer */
      break;
    }
    if (i) *o.p++ = ',';
    o.p = fmt_ptr(o.p, &li->ptrs[i]);
  }
  PUTS(&o, "],\"attributes\":[");
  for (int i = 0; i < li->nattrs; i++) {
    if (i) PUTS(&o, ",");
    PUTS(&o, "{\"id\":");
    put_i64(&o, (int64_t)li->attrs[i].id);
    PUTS(&o, "}");
  }
  PUTS(&o, "]");
  if (stack_json) {
    PUTS(&o, ",\"stack\":");
    put(&o, stack_json, strlen(stack_json));
  }
  PUTS(&o, "}");
  return o.p < o.end ? (size_t)(o.p - buf) : 0;
}

json_t *kc_launch_json(const struct kc_launch_info *li) {
  /* Off the hot path (violation records): the launch record's text, parsed. */
  size_t cap = 512 + 2 * li->param_size + 200 * (size_t)li->nptrs + 24 * (size_t)li->nattrs;
  char *buf = malloc(cap);
  size_t n = buf ? format_launch(li, buf, cap, NULL) : 0;
  json_t *j = n ? json_loadb(buf, n, 0, NULL) : NULL;
  free(buf);
  return j ? j : json_null();
}

void kc_launch_emit(const struct kc_launch_info *li, const char *stack_json) {
  char stackbuf[8192];
  size_t cap = 512 + 2 * li->param_size + 200 * (size_t)li->nptrs + 24 * (size_t)li->nattrs +
               (stack_json ? strlen(stack_json) : 0);
  uint64_t t = kc_prof_now();
  char *buf = cap <= sizeof stackbuf ? stackbuf : malloc(cap);
  size_t n = buf ? format_launch(li, buf, buf == stackbuf ? sizeof stackbuf : cap, stack_json) : 0;
  kc_prof_lap(KC_PS_trace_build, t);
  if (n)
    kc_report_emit_raw("launch", buf, n);
  else
    KC_INTERNAL_ERROR("could not build a 'launch' record");
  if (buf != stackbuf) free(buf);
}
