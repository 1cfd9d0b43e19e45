/* oracle/tensor.c — strided host tensors of any format, decoded exactly to
 * double (every supported format embeds in double). 8/16-bit formats use
 * lookup tables built once, so sampled checks decode at memory speed. */
#include "oracle.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

static double tab_fp16[65536], tab_bf16[65536], tab_e4m3[256], tab_e5m2[256];
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;

static void tab_build(void) {
  for (uint32_t i = 0; i < 65536; i++) {
    tab_fp16[i] = oc_decode(OC_FP16, i);
    tab_bf16[i] = oc_decode(OC_BF16, i);
  }
  for (uint32_t i = 0; i < 256; i++) {
    tab_e4m3[i] = oc_decode(OC_E4M3FN, i);
    tab_e5m2[i] = oc_decode(OC_E5M2, i);
  }
}

size_t oc_format_size(enum oc_format f) {
  switch (f) {
  case OC_FP64: return 8;
  case OC_FP32:
  case OC_TF32: return 4;
  case OC_FP16:
  case OC_BF16: return 2;
  default: return 1;
  }
}

int oc_tensor_make(struct oc_tensor *t, const void *data, enum oc_format fmt, int rank,
                   const int64_t *shape, const int64_t *strides) {
  if (rank < 0 || rank > OC_MAX_RANK || (unsigned)fmt >= OC_FORMAT_COUNT) return -1;
  memset(t, 0, sizeof *t);
  t->data = data;
  t->fmt = fmt;
  t->rank = rank;
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    if (shape[d] < 0) return -1;
    t->shape[d] = shape[d];
    t->stride[d] = strides ? strides[d] : s;
    s *= shape[d] ? shape[d] : 1;
  }
  pthread_once(&tab_once, tab_build);
  return 0;
}

int64_t oc_tensor_numel(const struct oc_tensor *t) {
  int64_t n = 1;
  for (int d = 0; d < t->rank; d++)
    n *= t->shape[d];
  return n;
}

uint64_t oc_tensor_bits(const struct oc_tensor *t, int64_t off) {
  const unsigned char *p = (const unsigned char *)t->data + off * (int64_t)oc_format_size(t->fmt);
  switch (oc_format_size(t->fmt)) {
  case 8: {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
  }
  case 4: {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
  }
  case 2: {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
  }
  default: return *p;
  }
}

double oc_tensor_at(const struct oc_tensor *t, int64_t off) {
  const unsigned char *p = (const unsigned char *)t->data + off * (int64_t)oc_format_size(t->fmt);
  switch (t->fmt) {
  case OC_FP64: {
    double v;
    memcpy(&v, p, 8);
    return v;
  }
  case OC_FP32:
  case OC_TF32: {
    float v;
    memcpy(&v, p, 4);
    return v;
  }
  case OC_FP16: {
    uint16_t v;
    memcpy(&v, p, 2);
    return tab_fp16[v];
  }
  case OC_BF16: {
    uint16_t v;
    memcpy(&v, p, 2);
    return tab_bf16[v];
  }
  case OC_E4M3FN: return tab_e4m3[*p];
  case OC_E5M2: return tab_e5m2[*p];
  default: return NAN;
  }
}

double oc_tensor_get(const struct oc_tensor *t, const int64_t *idx) {
  int64_t off = 0;
  for (int d = 0; d < t->rank; d++)
    off += idx[d] * t->stride[d];
  return oc_tensor_at(t, off);
}

void oc_tensor_gather(const struct oc_tensor *t, int64_t off, int64_t inc, int64_t n, double *out) {
  const unsigned char *base = t->data;
  switch (t->fmt) {
  case OC_FP32:
  case OC_TF32:
    for (int64_t i = 0; i < n; i++) {
      float v;
      memcpy(&v, base + 4 * (off + i * inc), 4);
      out[i] = v;
    }
    return;
  case OC_BF16:
  case OC_FP16: {
    const double *tab = t->fmt == OC_BF16 ? tab_bf16 : tab_fp16;
    for (int64_t i = 0; i < n; i++) {
      uint16_t v;
      memcpy(&v, base + 2 * (off + i * inc), 2);
      out[i] = tab[v];
    }
    return;
  }
  default:
    for (int64_t i = 0; i < n; i++)
      out[i] = oc_tensor_at(t, off + i * inc);
  }
}
