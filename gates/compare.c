/* gates/compare.c — bitwise comparison of a shadow run with post-state A,
 * and the evidence for the first difference: where (allocation, byte offset,
 * which pointer parameters point into it) and the differing values read as
 * the element types a kernel most likely uses. */
#include <stdio.h>
#include <string.h>

#include "formats.h"
#include "gate.h"
#include "gate_util.h"
#include "report.h"

/* JSON has no NaN or infinity: those are written as strings. */
static json_t *num(double v) {
  if (v != v) return json_string("nan");
  if (v > 1.7976931348623157e308) return json_string("inf");
  if (v < -1.7976931348623157e308) return json_string("-inf");
  return json_real(v);
}

/* One 32-bit word read as the element types a kernel most likely uses;
 * fp16/bf16 take the half of the word that differs first, decoded from the
 * bits alone (oc_decode_one): the first finding of a process built the
 * oracle's tables of every fp16 and bf16 code inside its check, 2.8 ms of
 * a 5 ms check on the H200. */
static json_t *interpret(const unsigned char *w, int nbytes, int half) {
  json_t *o = json_object();
  if (nbytes == 4) {
    uint32_t u;
    memcpy(&u, w, 4);
    float f;
    memcpy(&f, &u, 4);
    json_object_set_new(o, "fp32", num((double)f));
    json_object_set_new(o, "int32", json_integer((int32_t)u));
    char h[12];
    snprintf(h, sizeof h, "0x%08x", u);
    json_object_set_new(o, "bits32", json_string(h));
  }
  if (2 * half + 2 <= nbytes) {
    uint16_t h;
    memcpy(&h, w + 2 * half, 2);
    json_object_set_new(o, "fp16", num(oc_decode_one(OC_FP16, h)));
    json_object_set_new(o, "bf16", num(oc_decode_one(OC_BF16, h)));
  }
  return o;
}

long kc_compare_with_post(struct kc_shadow *s, json_t **evidence) {
  struct kc_diff d;
  if (kc_shadow_diff(s, &d)) return -1;
  if (!d.words || !evidence) return (long)d.words;
  const struct kc_region *r = &s->regions[d.region];
  int half = (d.nbytes >= 2 && !memcmp(d.expected, d.got, 2)) ? 1 : 0;
  json_t *params = json_array();
  for (int i = 0; i < s->li->nptrs; i++)
    if (s->li->ptrs[i].base == r->base)
      json_array_append_new(params, json_pack("{s:i, s:I}", "param_offset",
                                              (int)s->li->ptrs[i].offset, "alloc_offset",
                                              (json_int_t)(s->li->ptrs[i].value - r->base)));
  *evidence =
      json_pack("{s:{s:o, s:I}, s:I, s:o, s:o, s:o, s:I, s:i}", "allocation", "base",
                kc_json_addr(r->base), "size", (json_int_t)r->size, "offset",
                (json_int_t)(d.offset + 2 * (uint64_t)half), "pointed_to_by", params, "expected",
                interpret(d.expected, d.nbytes, half), "got", interpret(d.got, d.nbytes, half),
                "differing_words", (json_int_t)d.words, "regions", s->nregions);
  return (long)d.words;
}
