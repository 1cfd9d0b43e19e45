/* contract/torch_op.c — contracts on torch ops (torch_op: mylib::rmsnorm)
 * handed to the PyTorch binding as JSON (kcheck.h:
 * kcheck_torch_op_contracts): the op a custom op (torch.library.custom_op,
 * triton_op, load_inline) computes, how its arguments map to the oracle's
 * inputs, its profile and attributes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "../include/kcheck.h"
#include "contract.h"
#include "core.h"
#include "export.h"

/* args: {oracle input: argument}, or {"arg": argument, "view": chain}
 * where the entry names its argument through a view chain (the YAML's
 * own form). */
static json_t *args_json(const struct kc_contract *c) {
  json_t *o = json_object();
  for (int i = 0; i < c->ntorch_args; i++) {
    const struct kc_contract_kv *a = &c->torch_args[i];
    json_t *chain = c->torch_views ? json_object_get(c->torch_views, a->key) : NULL;
    json_object_set_new(o, a->key,
                        chain ? json_pack("{s:s, s:O}", "arg", a->value, "view", chain)
                              : json_string(a->value));
  }
  return o;
}

/* The attrs as typed JSON values (attrs.def): a bool true/false, an int,
 * a number, an enum's word, so the binding need not guess from text. */
static json_t *typed_attrs(const struct kc_contract *c) {
  json_t *o = json_object();
  for (int i = 0; i < c->nattrs; i++) {
    int id = kc_attr_find(c->attrs[i].key);
    const struct kc_attr_val *v = id >= 0 ? &c->attr.v[id] : NULL;
    json_t *j = NULL;
    if (v && v->set) switch (kc_attr_def((enum kc_attr_id)id)->type) {
      case KC_AT_BOOL: j = json_boolean(v->b); break;
      case KC_AT_INT: j = json_integer((json_int_t)v->i); break;
      case KC_AT_FLOAT: j = isfinite(v->f) ? json_real(v->f) : NULL; break;
      default: break;
      }
    json_object_set_new(o, c->attrs[i].key, j ? j : json_string(c->attrs[i].value));
  }
  return o;
}

KC_EXPORT long kcheck_torch_op_contracts(char *buf, unsigned long n) {
  if (kc_core_activate) kc_core_activate();
  json_t *all = json_array();
  for (int i = 0, k = kc_contracts_count(); i < k; i++) {
    const struct kc_contract *c = kc_contract_at(i);
    if (!c || !c->torch_op) continue;
    json_t *one = json_pack("{s:s, s:s?, s:s?, s:o, s:o, s:s}", "torch_op", c->torch_op, "op",
                            c->op, "profile", c->profile_spec, "attrs", typed_attrs(c), "args",
                            args_json(c), "where", c->where);
    if (one && c->torch_shapes) json_object_set(one, "shapes", c->torch_shapes);
    json_array_append_new(all, one);
  }
  char *s = json_dumps(all, JSON_COMPACT | JSON_ENSURE_ASCII);
  json_decref(all);
  long len = s ? (long)snprintf(buf, buf ? n : 0, "%s", s) : -1;
  free(s);
  return len;
}
