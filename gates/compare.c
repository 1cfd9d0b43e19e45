/* gates/compare.c — bitwise comparison of a shadow run with post-state A,
 * and the evidence for the first difference: where (allocation, byte offset,
 * which pointer parameters point into it) and the differing values read as
 * the element types a kernel most likely uses. */
#include <stdio.h>
#include <string.h>

#include "formats.h"
#include "gate.h"

static json_t *hex64(uint64_t v) {
  char s[24];
  snprintf(s, sizeof s, "0x%llx", (unsigned long long)v);
  return json_string(s);
}

/* JSON has no NaN or infinity: those are written as strings. */
static json_t *num(double v) {
  if (v != v) return json_string("nan");
  if (v > 1.7976931348623157e308) return json_string("inf");
  if (v < -1.7976931348623157e308) return json_string("-inf");
  return json_real(v);
}

/* The bytes around offset read as fp32, fp16, bf16 and int32 (aligned). */
static json_t *interpret(const unsigned char *bytes, uint64_t size, uint64_t off) {
  json_t *o = json_object();
  uint64_t a4 = off & ~3ull, a2 = off & ~1ull;
  if (a4 + 4 <= size) {
    uint32_t u;
    memcpy(&u, bytes + a4, 4);
    float f;
    memcpy(&f, &u, 4);
    json_object_set_new(o, "fp32", num((double)f));
    json_object_set_new(o, "int32", json_integer((int32_t)u));
    char h[12];
    snprintf(h, sizeof h, "0x%08x", u);
    json_object_set_new(o, "bits32", json_string(h));
  }
  if (a2 + 2 <= size) {
    uint16_t h;
    memcpy(&h, bytes + a2, 2);
    json_object_set_new(o, "fp16", num(oc_decode(OC_FP16, h)));
    json_object_set_new(o, "bf16", num(oc_decode(OC_BF16, h)));
  }
  return o;
}

long kc_compare_with_post(const struct kc_shadow *s, json_t **evidence) {
  long differing = 0;
  int first_region = -1;
  uint64_t first_off = 0;
  for (int i = 0; i < s->nregions; i++) {
    const struct kc_region *r = &s->regions[i];
    if (!memcmp(r->post, r->result, r->size)) continue;
    for (uint64_t j = 0; j < r->size; j++) {
      if (r->post[j] == r->result[j]) continue;
      if (first_region < 0) first_region = i, first_off = j;
      differing++;
    }
  }
  if (!differing || !evidence) return differing;
  const struct kc_region *r = &s->regions[first_region];
  json_t *params = json_array();
  for (int i = 0; i < s->li->nptrs; i++)
    if (s->li->ptrs[i].base == r->base)
      json_array_append_new(params, json_pack("{s:i, s:I}", "param_offset",
                                              (int)s->li->ptrs[i].offset, "alloc_offset",
                                              (json_int_t)(s->li->ptrs[i].value - r->base)));
  *evidence = json_pack("{s:{s:o, s:I}, s:I, s:o, s:o, s:o, s:I, s:i}", "allocation", "base",
                        hex64(r->base), "size", (json_int_t)r->size, "offset",
                        (json_int_t)first_off, "pointed_to_by", params, "expected",
                        interpret(r->post, r->size, first_off), "got",
                        interpret(r->result, r->size, first_off), "differing_bytes",
                        (json_int_t)differing, "regions", s->nregions);
  return differing;
}
