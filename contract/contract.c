/* contract/contract.c — contract files: YAML (libyaml's document API) to
 * validated struct kc_contract, with every problem reported by file, line
 * and column; the process registry and kernel matching. */
#include "contract.h"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <jansson.h>
#include <limits.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "elementwise.h"
#include "formats.h"
#include "kernel.h"
#include "log.h"
#include "options.h"
#include "oracle.h"
#include "regex_guard.h"

/* ------------------------------------------------------------ formats */

static const struct {
  const char *name;
  int fmt, bytes;
} int_formats[] = {
    {"int8", KC_FMT_INT8, 1},     {"int16", KC_FMT_INT16, 2},   {"int32", KC_FMT_INT32, 4},
    {"int64", KC_FMT_INT64, 8},   {"uint8", KC_FMT_UINT8, 1},   {"uint16", KC_FMT_UINT16, 2},
    {"uint32", KC_FMT_UINT32, 4}, {"uint64", KC_FMT_UINT64, 8}, {"bool", KC_FMT_BOOL, 1},
};
#define N_INT_FORMATS (sizeof int_formats / sizeof int_formats[0])

int kc_contract_format_parse(const char *name) {
  for (size_t i = 0; i < N_INT_FORMATS; i++)
    if (!strcmp(name, int_formats[i].name)) return int_formats[i].fmt;
  return oc_format_parse(name);
}

const char *kc_contract_format_name(int fmt) {
  for (size_t i = 0; i < N_INT_FORMATS; i++)
    if (int_formats[i].fmt == fmt) return int_formats[i].name;
  if (fmt >= 0 && fmt < OC_FORMAT_COUNT) return oc_format_info((enum oc_format)fmt)->name;
  return "?";
}

int kc_contract_format_bytes(int fmt) {
  for (size_t i = 0; i < N_INT_FORMATS; i++)
    if (int_formats[i].fmt == fmt) return int_formats[i].bytes;
  if (fmt >= 0 && fmt < OC_FORMAT_COUNT) return oc_format_info((enum oc_format)fmt)->bits / 8;
  return 0;
}

/* ------------------------------------------------------------ vocabulary */

static const char *const top_keys[] = {"contracts", NULL};
static const char *const contract_keys[] = {"kernel",  "params",         "op",     "attrs",
                                            "profile", "nondeterminism", "domain", "launch",
                                            "shapes",  "torch_op",       "args",   NULL};
static const char *const kernel_keys[] = {"name", "glob", "regex", NULL};
static const char *const param_keys[] = {"name", "tensor", "scalar", "fields", "opaque", NULL};
static const char *const field_keys[] = {"name", "offset", "tensor", "scalar", NULL};
static const char *const tensor_keys[] = {"role", "format", "shape", "strides", NULL};
static const char *const scalar_keys[] = {"type", NULL};
static const char *const launch_keys[] = {"grid", "block", "shmem", NULL};
static const char *const roles[] = {"in", "out", "inout", NULL};
static const char *const scalar_types[] = {"i32", "i64", "u32", "u64", "f32", "f64", NULL};

static int find_word(const char *const *list, const char *w) {
  for (int i = 0; list[i]; i++)
    if (!strcmp(list[i], w)) return i;
  return -1;
}

static const char *nearest(const char *const *list, const char *w) {
  const char *best = list[0];
  size_t bestd = (size_t)-1;
  for (int i = 0; list[i]; i++) {
    size_t d = kc_edit_distance(w, list[i]);
    if (d < bestd) bestd = d, best = list[i];
  }
  return best;
}

static void join(const char *const *list, char *buf, size_t n) {
  size_t used = 0;
  buf[0] = 0;
  for (int i = 0; list[i] && used < n; i++)
    used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", list[i]);
}

/* Ops are the oracle's (oracle/ops.def). */
static int op_known(const char *op) { return oc_op_find(op) != NULL; }

/* ------------------------------------------------------------ diagnostics */

struct pctx {
  const char *file;
  yaml_document_t *doc;
  struct kc_contract_set *set;
  int errors;
  /* The contract being built (NULL in pass 1). */
  struct kc_contract *c;
  /* Scalar names collected in pass 1, for expression lookups. */
  int nnames;
  char **names;
  int *name_line;
  /* Launch variables (gridDim.x, ...): refused inside the launch section,
   * noted as used elsewhere. */
  int in_launch, launch_refused, launch_used;
};

__attribute__((format(printf, 4, 5))) static void diag_at(struct pctx *x, int line, int col,
                                                          const char *fmt, ...) {
  char msg[4096]; /* an unknown op's message lists every known op */
  va_list ap;
  va_start(ap, fmt);
  // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): va_start just above
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  struct kc_contract_diag *d = realloc(x->set->diags, (size_t)(x->set->ndiags + 1) * sizeof *d);
  x->errors++;
  if (!d) return;
  x->set->diags = d;
  d[x->set->ndiags++] = (struct kc_contract_diag){strdup(x->file), line, col, strdup(msg)};
}

#define NODE_LINE(nd) ((int)(nd)->start_mark.line + 1)
#define NODE_COL(nd) ((int)(nd)->start_mark.column + 1)
#define diag(x, nd, ...) diag_at((x), NODE_LINE(nd), NODE_COL(nd), __VA_ARGS__)

static yaml_node_t *node(struct pctx *x, int id) { return yaml_document_get_node(x->doc, id); }

static const char *kind_name(const yaml_node_t *nd) {
  switch (nd->type) {
  case YAML_SCALAR_NODE: return "a scalar";
  case YAML_SEQUENCE_NODE: return "a list";
  case YAML_MAPPING_NODE: return "a mapping";
  default: return "nothing";
  }
}

static const char *scalar(const yaml_node_t *nd) {
  return nd->type == YAML_SCALAR_NODE ? (const char *)nd->data.scalar.value : NULL;
}

/* The scalar text, or a diagnostic naming what was expected. */
static const char *want_scalar(struct pctx *x, yaml_node_t *nd, const char *what) {
  const char *s = scalar(nd);
  if (!s) diag(x, nd, "%s: expected a scalar, found %s", what, kind_name(nd));
  return s;
}

static int want_type(struct pctx *x, yaml_node_t *nd, yaml_node_type_t t, const char *what) {
  if (nd->type == t) return 1;
  diag(x, nd, "%s: expected %s, found %s", what,
       t == YAML_MAPPING_NODE ? "a mapping" : (t == YAML_SEQUENCE_NODE ? "a list" : "a scalar"),
       kind_name(nd));
  return 0;
}

/* Looks up the keys of a mapping: out[i] gets the value node of keys[i]
 * (NULL when absent). Unknown and duplicate keys are reported. */
static void map_keys(struct pctx *x, yaml_node_t *map, const char *const *keys, const char *what,
                     yaml_node_t **out) {
  for (int i = 0; keys[i]; i++)
    out[i] = NULL;
  for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top;
       pr++) {
    yaml_node_t *k = node(x, pr->key), *v = node(x, pr->value);
    const char *ks = scalar(k);
    if (!ks) {
      diag(x, k, "%s: keys must be scalars", what);
      continue;
    }
    int i = find_word(keys, ks);
    if (i < 0) {
      char all[256];
      join(keys, all, sizeof all);
      diag(x, k, "unknown key '%s' in %s (did you mean '%s'? expected one of: %s)", ks, what,
           nearest(keys, ks), all);
      continue;
    }
    if (out[i]) {
      diag(x, k, "duplicate key '%s' in %s (first at line %d)", ks, what, NODE_LINE(out[i]));
      continue;
    }
    out[i] = v;
  }
}

/* ------------------------------------------------------------ expressions */

static int lookup_name(void *ctx, const char *name, size_t len) {
  struct pctx *x = ctx;
  for (int i = 0; i < x->nnames; i++)
    if (strlen(x->names[i]) == len && !strncmp(x->names[i], name, len)) return i;
  int lv = kc_contract_launch_var(name, len);
  if (lv >= 0 && x->in_launch) {
    x->launch_refused = 1;
    return -1;
  }
  if (lv >= 0) {
    x->launch_used = 1;
    return KC_CONTRACT_LAUNCH_VAR0 + lv;
  }
  return -1;
}

static struct kc_contract_expr *compile(struct pctx *x, yaml_node_t *nd, int allow_bool,
                                        const char *what) {
  const char *s = want_scalar(x, nd, what);
  if (!s) return NULL;
  char err[256];
  int pos = 0;
  x->launch_refused = 0;
  struct kc_contract_expr *e =
      kc_contract_expr_compile(s, allow_bool, lookup_name, x, err, sizeof err, &pos);
  if (e) return e;
  if (x->launch_refused) {
    diag(x, nd,
         "%s '%s': the launch section computes the launch dimensions, so it cannot use "
         "gridDim/blockDim (use them in shapes, strides or the domain)",
         what, s);
    return NULL;
  }
  /* Quoted scalars start one column before their text; the column is only
   * exact for single-line scalars, which expressions are. */
  int quoted = nd->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
               nd->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
  char known[512] = "";
  if (strstr(err, "unknown scalar")) {
    size_t used = (size_t)snprintf(known, sizeof known, " (scalars:");
    if (!x->nnames) used += (size_t)snprintf(known + used, sizeof known - used, " none");
    for (int i = 0; i < x->nnames && used < sizeof known; i++)
      used += (size_t)snprintf(known + used, sizeof known - used, " %s", x->names[i]);
    if (used < sizeof known)
      snprintf(known + used, sizeof known - used, "; launch: gridDim.x/y/z, blockDim.x/y/z)");
  }
  /* In a flow list [a, b] YAML splits at commas: ceil_div(n, 256) arrives
   * as "ceil_div(n" and "256)". Say so rather than only "expected ','". */
  int depth = 0;
  for (const char *q = s; *q; q++)
    depth += (*q == '(') - (*q == ')');
  const char *hint = depth && !quoted ? " (quote expressions that contain ',' inside [...])" : "";
  diag_at(x, NODE_LINE(nd), NODE_COL(nd) + quoted + pos,
          "%s '%s': %s%s at column %d of the expression%s", what, s, err, known, pos + 1, hint);
  return NULL;
}

/* ------------------------------------------------------------ parameters */

static void parse_tensor(struct pctx *x, yaml_node_t *nd, const char *pname,
                         struct kc_contract_tensor *t) {
  char what[160];
  snprintf(what, sizeof what, "tensor '%.128s'", pname);
  if (!want_type(x, nd, YAML_MAPPING_NODE, what)) return;
  yaml_node_t *v[5];
  map_keys(x, nd, tensor_keys, what, v);
  if (!v[0]) {
    diag(x, nd, "%s has no role (expected role: in, out or inout)", what);
  } else {
    const char *r = want_scalar(x, v[0], "role");
    int i = r ? find_word(roles, r) : -1;
    if (r && i < 0)
      diag(x, v[0], "bad role '%s' for %s (expected in, out or inout)", r, what);
    else if (i >= 0)
      t->role = (enum kc_contract_role)i;
  }
  if (!v[1]) {
    diag(x, nd, "%s has no format (expected format: fp32, bf16, int32, ...)", what);
  } else {
    const char *f = want_scalar(x, v[1], "format");
    if (f && (t->format = kc_contract_format_parse(f)) < 0)
      diag(x, v[1],
           "unknown format '%s' for %s (expected fp64, fp32, tf32, fp16, bf16, e4m3fn, e5m2, "
           "int8, int16, int32, int64, uint8, uint16, uint32, uint64 or bool)",
           f, what);
  }
  if (!v[2]) {
    diag(x, nd, "%s has no shape (expected shape: [expr, ...])", what);
    return;
  }
  if (!want_type(x, v[2], YAML_SEQUENCE_NODE, "shape")) return;
  int rank = (int)(v[2]->data.sequence.items.top - v[2]->data.sequence.items.start);
  if (rank > KC_CONTRACT_MAX_RANK) {
    diag(x, v[2], "shape of %s has rank %d; at most %d", what, rank, KC_CONTRACT_MAX_RANK);
    return;
  }
  t->rank = rank;
  for (int i = 0; i < rank; i++)
    t->shape[i] = compile(x, node(x, v[2]->data.sequence.items.start[i]), 0, "shape expression");
  if (v[3] && want_type(x, v[3], YAML_SEQUENCE_NODE, "strides")) {
    int ns = (int)(v[3]->data.sequence.items.top - v[3]->data.sequence.items.start);
    if (ns != rank) {
      diag(x, v[3], "%s has %d strides for a shape of rank %d", what, ns, rank);
      return;
    }
    for (int i = 0; i < rank; i++)
      t->strides[i] =
          compile(x, node(x, v[3]->data.sequence.items.start[i]), 0, "stride expression");
  }
}

static void parse_scalar_type(struct pctx *x, yaml_node_t *nd, const char *pname,
                              struct kc_contract_value *val) {
  const char *ty = NULL;
  yaml_node_t *at = nd;
  if (nd->type == YAML_MAPPING_NODE) {
    yaml_node_t *v[2];
    char what[160];
    snprintf(what, sizeof what, "scalar '%.128s'", pname);
    map_keys(x, nd, scalar_keys, what, v);
    if (!v[0]) {
      diag(x, nd, "scalar '%s' has no type (expected type: i32, i64, u32, u64, f32 or f64)", pname);
      return;
    }
    at = v[0];
    ty = want_scalar(x, v[0], "type");
  } else {
    ty = want_scalar(x, nd, "scalar");
  }
  if (!ty) return;
  int i = find_word(scalar_types, ty);
  if (i < 0)
    diag(x, at, "unknown scalar type '%s' for '%s' (expected i32, i64, u32, u64, f32 or f64)", ty,
         pname);
  else
    val->scalar = (enum kc_contract_scalar)i;
}

static int name_taken(struct pctx *x, const char *name) {
  struct kc_contract *c = x->c;
  for (int i = 0; i < c->nparams; i++) {
    if (c->params[i].v.name && !strcmp(c->params[i].v.name, name)) return c->params[i].v.line;
    for (int j = 0; j < c->params[i].nfields; j++)
      if (c->params[i].fields[j].name && !strcmp(c->params[i].fields[j].name, name))
        return c->params[i].fields[j].line;
  }
  return 0;
}

static void add_scalar(struct kc_contract *c, struct kc_contract_value *v) {
  const struct kc_contract_value **s = realloc(c->scalars, (size_t)(c->nscalars + 1) * sizeof *s);
  if (!s) return;
  c->scalars = s;
  v->scalar_index = c->nscalars;
  s[c->nscalars++] = v;
}

/* Pass 1 collects scalar names (x->c NULL); pass 2 builds the value. */
static void parse_value(struct pctx *x, yaml_node_t *nd, int is_field,
                        struct kc_contract_value *val, struct kc_contract_param *param) {
  const char *what = is_field ? "field" : "parameter";
  if (!want_type(x, nd, YAML_MAPPING_NODE, what)) return;
  yaml_node_t *v[6];
  const char *const *keys = is_field ? field_keys : param_keys;
  if (!x->c) {
    /* Pass 1: only the names of scalars, silently. */
    for (yaml_node_pair_t *pr = nd->data.mapping.pairs.start; pr < nd->data.mapping.pairs.top;
         pr++) {
      const char *k = scalar(node(x, pr->key));
      if (k && !strcmp(k, "name")) {
        const char *nm = scalar(node(x, pr->value));
        int has_scalar = 0;
        for (yaml_node_pair_t *q = nd->data.mapping.pairs.start; q < nd->data.mapping.pairs.top;
             q++) {
          const char *k2 = scalar(node(x, q->key));
          has_scalar |= k2 && !strcmp(k2, "scalar");
        }
        if (nm && has_scalar && lookup_name(x, nm, strlen(nm)) < 0) {
          char **nn = realloc(x->names, (size_t)(x->nnames + 1) * sizeof *nn);
          if (nn) {
            x->names = nn;
            x->names[x->nnames++] = strdup(nm);
          }
        }
      }
      if (k && !strcmp(k, "fields") && !is_field) {
        yaml_node_t *f = node(x, pr->value);
        if (f->type == YAML_SEQUENCE_NODE)
          for (yaml_node_item_t *it = f->data.sequence.items.start; it < f->data.sequence.items.top;
               it++) {
            struct kc_contract_value dummy;
            parse_value(x, node(x, *it), 1, &dummy, NULL);
          }
      }
    }
    return;
  }
  map_keys(x, nd, keys, what, v);
  val->line = NODE_LINE(nd);
  const char *nm = v[0] ? want_scalar(x, v[0], "name") : NULL;
  if (!v[0]) diag(x, nd, "%s has no name (expected name: ...)", what);
  char label[128];
  snprintf(label, sizeof label, "%.120s", nm ? nm : "?");
  if (nm) {
    int first = name_taken(x, nm);
    if (first)
      diag(x, v[0], "duplicate parameter name '%s' (first at line %d)", nm, first);
    else
      val->name = strdup(nm);
  }
  /* Which description: tensor, scalar, fields (parameters), opaque. */
  int it = is_field ? 2 : 1, is = is_field ? 3 : 2;
  int ifl = is_field ? -1 : 3, iop = is_field ? -1 : 4;
  int kinds = !!v[it] + !!v[is] + (ifl >= 0 && v[ifl]) + (iop >= 0 && v[iop]);
  if (kinds != 1) {
    diag(x, nd, "%s '%s' needs exactly one of %s (found %d)", what, label,
         is_field ? "tensor, scalar" : "tensor, scalar, fields, opaque", kinds);
  }
  if (is_field) {
    if (!v[1]) {
      diag(x, nd, "field '%s' has no offset (expected offset: BYTES inside the struct)", label);
    } else {
      const char *o = want_scalar(x, v[1], "offset");
      char *end = NULL;
      long off = o ? strtol(o, &end, 0) : -1;
      if (o && (end == o || *end || off < 0 || off > 4096))
        diag(x, v[1], "bad offset '%s' for field '%s' (expected a byte offset 0..4096)", o, label);
      else if (o)
        val->offset = (uint32_t)off;
    }
  }
  if (v[it]) {
    val->kind = KC_PK_TENSOR;
    parse_tensor(x, v[it], label, &val->tensor);
  } else if (v[is]) {
    val->kind = KC_PK_SCALAR;
    parse_scalar_type(x, v[is], label, val);
    if (val->name) add_scalar(x->c, val);
  } else if (ifl >= 0 && v[ifl]) {
    val->kind = KC_PK_STRUCT;
    if (!want_type(x, v[ifl], YAML_SEQUENCE_NODE, "fields")) return;
    if (v[ifl]->data.sequence.items.top - v[ifl]->data.sequence.items.start >
        KC_CONTRACT_MAX_PARAMS) {
      diag(x, v[ifl], "more than %d fields in one parameter", KC_CONTRACT_MAX_PARAMS);
      return;
    }
    int nf = (int)(v[ifl]->data.sequence.items.top - v[ifl]->data.sequence.items.start);
    param->fields = calloc((size_t)(nf ? nf : 1), sizeof *param->fields);
    if (!param->fields) return;
    for (int i = 0; i < nf; i++) {
      parse_value(x, node(x, v[ifl]->data.sequence.items.start[i]), 1, &param->fields[i], NULL);
      param->nfields = i + 1;
    }
  } else if (iop >= 0 && v[iop]) {
    val->kind = KC_PK_OPAQUE;
  }
}

/* ------------------------------------------------------------ contract */

static void parse_kernel(struct pctx *x, yaml_node_t *nd) {
  struct kc_contract *c = x->c;
  if (!want_type(x, nd, YAML_MAPPING_NODE, "kernel")) return;
  yaml_node_t *v[3];
  map_keys(x, nd, kernel_keys, "kernel", v);
  int n = !!v[0] + !!v[1] + !!v[2];
  if (n != 1) {
    diag(x, nd, "kernel needs exactly one of name, glob, regex (found %d)", n);
    return;
  }
  int i = v[0] ? 0 : (v[1] ? 1 : 2);
  const char *s = want_scalar(x, v[i], kernel_keys[i]);
  if (!s) return;
  c->match = (enum kc_contract_match_kind)i;
  c->pattern = strdup(s);
  if (c->match == KC_CONTRACT_REGEX) {
    regex_t *re = calloc(1, sizeof *re);
    if (!re) return;
    char msg[256];
    if (kc_regex_compile(re, s, msg, sizeof msg)) {
      diag(x, v[i], "bad regex '%.300s': %s (expected a POSIX extended regular expression)", s,
           msg);
      free(re);
      return;
    }
    c->regex = re;
  }
}

static void parse_attrs(struct pctx *x, yaml_node_t *nd) {
  struct kc_contract *c = x->c;
  if (!want_type(x, nd, YAML_MAPPING_NODE, "attrs")) return;
  size_t np = (size_t)(nd->data.mapping.pairs.top - nd->data.mapping.pairs.start);
  c->attrs = calloc(np ? np : 1, sizeof *c->attrs);
  if (!c->attrs) return;
  const char *const *names = kc_attr_names();
  const struct oc_op_info *op = oc_op_find(c->op);
  for (yaml_node_pair_t *pr = nd->data.mapping.pairs.start; pr < nd->data.mapping.pairs.top; pr++) {
    yaml_node_t *k = node(x, pr->key), *v = node(x, pr->value);
    const char *ks = want_scalar(x, k, "attrs key");
    if (!ks) continue;
    int i = kc_attr_find(ks);
    if (i < 0) {
      char all[512];
      join(names, all, sizeof all);
      diag(x, k, "unknown attr '%s' (did you mean '%s'? expected one of: %s)", ks,
           nearest(names, ks), all);
      continue;
    }
    const char *vs = want_scalar(x, v, ks);
    if (!vs) continue;
    char why[160];
    if (kc_attr_parse((enum kc_attr_id)i, vs, &c->attr.v[i], why, sizeof why)) {
      diag(x, v, "bad value '%s' for attr '%s' (expected %s)", vs, ks, why);
      continue;
    }
    if (op && !kc_attr_applies((enum kc_attr_id)i, (int)op->cls)) {
      char cls[128] = "";
      for (int k2 = 0, used = 0; k2 < 32 && used < (int)sizeof cls; k2++)
        if (kc_attr_def((enum kc_attr_id)i)->classes >> k2 & 1u)
          used += snprintf(cls + used, sizeof cls - (size_t)used, "%s%s", used ? ", " : "",
                           oc_op_class_name((enum oc_op_class)k2));
      diag(x, k, "attr '%s' does not apply to op '%s' (class %s); it applies to %s ops", ks, c->op,
           oc_op_class_name(op->cls), cls);
      c->attr.v[i].set = 0;
      continue;
    }
    c->attrs[c->nattrs].key = strdup(ks);
    c->attrs[c->nattrs++].value = strdup(vs);
  }
}

static const char *attr_of(const struct kc_contract *c, const char *key) {
  for (int i = 0; i < c->nattrs; i++)
    if (!strcmp(c->attrs[i].key, key)) return c->attrs[i].value;
  return NULL;
}

/* The op's inputs (oracle/ops.def arity) against the declared tensors: an
 * `in` tensor each (in place: one inout tensor and no `in`); a binary
 * elementwise op may take its other operand from one float scalar or from
 * a constant (attr lhs or rhs). Constants only where they are operands. */
static void check_arity(struct pctx *x, const struct kc_contract *c, yaml_node_t *at) {
  const struct oc_op_info *op = oc_op_find(c->op);
  if (!op) return;
  if (c->torch_op) { /* a torch op's operands are its args (tensors or constants) */
    int n = 0;
    for (int i = 0; i < c->ntorch_args; i++)
      n += strcmp(c->torch_args[i].key, "out") != 0;
    int ew = op->cls == OC_CLASS_ELEMENTWISE;
    if (ew ? n != op->arity : n < op->arity)
      diag(x, at, "op '%s' takes %s%d operand%s; args maps %d", c->op, ew ? "" : "at least ",
           op->arity, op->arity == 1 ? "" : "s", n);
    return;
  }
  int nin = 0, ninout = 0, nfloat = 0;
  for (int i = 0; i < c->nparams; i++) {
    const struct kc_contract_param *p = &c->params[i];
    int nv = p->v.kind == KC_PK_STRUCT ? p->nfields : 1;
    for (int f = 0; f < nv; f++) {
      const struct kc_contract_value *v = p->v.kind == KC_PK_STRUCT ? &p->fields[f] : &p->v;
      if (v->kind == KC_PK_TENSOR) {
        nin += v->tensor.role == KC_ROLE_IN;
        ninout += v->tensor.role == KC_ROLE_INOUT;
      } else if (v->kind == KC_PK_SCALAR) {
        nfloat += v->scalar == KC_SC_F32 || v->scalar == KC_SC_F64;
      }
    }
  }
  int inputs = nin ? nin : ninout ? 1 : 0;
  const char *lhs = attr_of(c, "lhs"), *rhs = attr_of(c, "rhs");
  int ew = op->cls == OC_CLASS_ELEMENTWISE, konst = (lhs != NULL) + (rhs != NULL);
  int clamp = op->id == OC_ID_CLAMP;
  if (konst && !(ew && op->arity == 2)) {
    diag(x, at, "op '%s' takes no constant operand (attrs lhs/rhs are for binary elementwise ops)",
         c->op);
  } else if (konst == 2) {
    diag(x, at, "op '%s': give one constant operand, lhs or rhs, not both", c->op);
  } else if ((attr_of(c, "min") || attr_of(c, "max")) && !clamp) {
    diag(x, at, "attrs min/max are clamp's bounds; op '%s' takes none", c->op);
  } else if (ew && op->arity == 2 && inputs == 1 && !konst && nfloat != 1) {
    diag(x, at,
         "op '%s' takes 2 operands: the contract declares one input tensor and %s (give a "
         "second input tensor, one float scalar, or a constant as attr lhs or rhs)",
         c->op, nfloat ? "several float scalars" : "no float scalar or constant");
  } else if (ew && op->arity == 2 && inputs == 2 && konst) {
    diag(x, at, "op '%s' takes 2 operands: the contract declares two input tensors and a constant",
         c->op);
  } else if (ew ? (op->arity == 2 ? inputs < 1 || inputs > 2 : inputs != op->arity)
                : inputs < op->arity) {
    diag(x, at, "op '%s' takes %s%d input tensor%s; the contract declares %d", c->op,
         ew ? "" : "at least ", op->arity, op->arity == 1 ? "" : "s", inputs);
  }
}

static void parse_launch(struct pctx *x, yaml_node_t *nd) {
  struct kc_contract *c = x->c;
  if (!want_type(x, nd, YAML_MAPPING_NODE, "launch")) return;
  x->in_launch = 1;
  yaml_node_t *v[3];
  map_keys(x, nd, launch_keys, "launch", v);
  for (int d = 0; d < 2; d++) {
    struct kc_contract_expr **dst = d ? c->block : c->grid;
    if (!v[d]) {
      diag(x, nd, "launch has no %s (expected %s: [x, y, z])", launch_keys[d], launch_keys[d]);
      continue;
    }
    if (!want_type(x, v[d], YAML_SEQUENCE_NODE, launch_keys[d])) continue;
    int n = (int)(v[d]->data.sequence.items.top - v[d]->data.sequence.items.start);
    if (n < 1 || n > 3) {
      diag(x, v[d], "launch %s has %d expressions (expected 1 to 3)", launch_keys[d], n);
      continue;
    }
    char what[32];
    snprintf(what, sizeof what, "%s expression", launch_keys[d]);
    for (int i = 0; i < n; i++)
      dst[i] = compile(x, node(x, v[d]->data.sequence.items.start[i]), 0, what);
  }
  if (v[2]) c->shmem = compile(x, v[2], 0, "shmem expression");
  c->has_launch = 1;
  x->in_launch = 0;
}

static void parse_shapes(struct pctx *x, yaml_node_t *nd) {
  struct kc_contract *c = x->c;
  if (!want_type(x, nd, YAML_SEQUENCE_NODE, "shapes")) return;
  int n = (int)(nd->data.sequence.items.top - nd->data.sequence.items.start);
  c->shapes =
      malloc((size_t)(n ? n : 1) * (size_t)(c->nscalars ? c->nscalars : 1) * sizeof *c->shapes);
  if (!c->shapes) return;
  for (int r = 0; r < n; r++) {
    yaml_node_t *row = node(x, nd->data.sequence.items.start[r]);
    int64_t *vals = c->shapes + (size_t)r * (size_t)c->nscalars;
    for (int i = 0; i < c->nscalars; i++)
      vals[i] = INT64_MIN;
    c->nshapes = r + 1;
    if (!want_type(x, row, YAML_MAPPING_NODE, "shapes entry")) continue;
    for (yaml_node_pair_t *pr = row->data.mapping.pairs.start; pr < row->data.mapping.pairs.top;
         pr++) {
      yaml_node_t *k = node(x, pr->key), *v = node(x, pr->value);
      const char *ks = want_scalar(x, k, "shapes key"), *vs = want_scalar(x, v, "shapes value");
      if (!ks || !vs) continue;
      int idx = -1;
      for (int i = 0; i < c->nscalars; i++)
        if (!strcmp(c->scalars[i]->name, ks)) idx = i;
      if (idx < 0) {
        diag(x, k, "shapes entry names '%s', which is not a scalar parameter", ks);
        continue;
      }
      char *end;
      long long val = strtoll(vs, &end, 0);
      if (end == vs || *end)
        diag(x, v, "bad value '%s' for '%s' in shapes (expected an integer)", vs, ks);
      else
        vals[idx] = val;
    }
  }
}

/* What lint can decide about a tensor parameter without a launch: an
 * extent that never holds an element, and a format narrower than the float
 * type the kernel's mangled name gives the parameter (the shadow buffer
 * would be a fraction of what the kernel reads). */
static void lint_tensor(struct pctx *x, yaml_node_t *nd, int idx,
                        const struct kc_contract_value *v) {
  if (v->kind != KC_PK_TENSOR) return;
  const struct kc_contract_tensor *t = &v->tensor;
  for (int r = 0; r < t->rank; r++) {
    int64_t most = 0;
    if (t->shape[r] && kc_contract_expr_never_positive(t->shape[r], &most))
      diag(x, nd,
           "tensor '%s': extent %d '%s' is never positive (at most %lld for scalars >= 0): the "
           "tensor would hold no element",
           v->name ? v->name : "?", r, kc_contract_expr_text(t->shape[r]), (long long)most);
  }
  const struct kc_contract *c = x->c;
  if (c->match != KC_CONTRACT_NAME || !c->pattern) return;
  int want = kc_contract_mangled_float_pointee(c->pattern, idx);
  int have = kc_contract_format_bytes(t->format);
  if (want > 0 && have > 0 && have < want)
    diag(x, nd,
         "tensor '%s': format %s (%d byte%s per element) is narrower than the %d-byte floats "
         "parameter %d points to in the kernel's mangled name",
         v->name ? v->name : "?", kc_contract_format_name(t->format), have, have == 1 ? "" : "s",
         want, idx);
}

/* A torch_op contract's shapes: [{input: [dims...], ...}, ...], each
 * input one of args' keys: the author's own shapes for the shapes gate,
 * beside those the op's class implies. */
static void parse_torch_shapes(struct pctx *x, struct kc_contract *c, yaml_node_t *nd) {
  if (!want_type(x, nd, YAML_SEQUENCE_NODE, "shapes")) return;
  json_t *all = json_array();
  for (yaml_node_item_t *it = nd->data.sequence.items.start; it < nd->data.sequence.items.top;
       it++) {
    yaml_node_t *row = node(x, *it);
    if (!want_type(x, row, YAML_MAPPING_NODE, "shapes entry")) continue;
    json_t *one = json_object();
    for (yaml_node_pair_t *pr = row->data.mapping.pairs.start; pr < row->data.mapping.pairs.top;
         pr++) {
      yaml_node_t *k = node(x, pr->key), *v = node(x, pr->value);
      const char *ks = want_scalar(x, k, "shapes key");
      if (!ks) continue;
      int known = 0;
      for (int i = 0; c->torch_args && i < c->ntorch_args; i++)
        known |= c->torch_args[i].key && !strcmp(c->torch_args[i].key, ks) && strcmp(ks, "out");
      if (!known) {
        diag(x, k, "shapes entry names '%s', which is not an input in args", ks);
        continue;
      }
      if (!want_type(x, v, YAML_SEQUENCE_NODE, "shapes value")) continue;
      json_t *dims = json_array();
      int n = 0, ok = 1;
      for (yaml_node_item_t *d = v->data.sequence.items.start; d < v->data.sequence.items.top;
           d++, n++) {
        const char *ds = want_scalar(x, node(x, *d), "shapes dimension");
        char *end = NULL;
        long long e = ds ? strtoll(ds, &end, 10) : 0;
        if (!ds || end == ds || *end || e < 1 || e > (1LL << 40)) {
          if (ds) diag(x, node(x, *d), "bad dimension '%s' in shapes (a positive integer)", ds);
          ok = 0;
          break;
        }
        json_array_append_new(dims, json_integer((json_int_t)e));
      }
      if (ok && (n < 1 || n > KC_CONTRACT_MAX_RANK)) {
        diag(x, v, "shapes value for '%s' has %d dimensions (1 to %d)", ks, n,
             KC_CONTRACT_MAX_RANK);
        ok = 0;
      }
      if (ok)
        json_object_set_new(one, ks, dims);
      else
        json_decref(dims);
    }
    json_array_append_new(all, one);
  }
  json_decref(c->torch_shapes);
  c->torch_shapes = all;
}

/* The view ops an args entry may apply to its argument (view chains):
 * contract/view_ops.def. */
static const struct {
  const char *name;
  int min, max, sized;
} view_ops[] = {
#define KC_VIEW_OP(name, min, max, sized) {name, min, max, sized},
#include "view_ops.def"
#undef KC_VIEW_OP
};

#define VIEW_MAX_STEPS 16

/* One step of a view chain, [op, int...], as JSON; NULL after a
 * diagnostic (unknown op, wrong arity, an argument not an integer, a size
 * below -1 or two -1s in a view's sizes, a permutation naming a dim
 * twice). */
static json_t *view_step(struct pctx *x, yaml_node_t *st) {
  if (st->type != YAML_SEQUENCE_NODE) {
    diag(x, st, "view step: expected [op, int...], found %s", kind_name(st));
    return NULL;
  }
  yaml_node_item_t *it = st->data.sequence.items.start, *end = st->data.sequence.items.top;
  const char *op = it < end ? scalar(node(x, *it)) : NULL;
  if (!op) {
    diag(x, st,
         "view step: expected [op, int...] with op one of view, reshape, transpose, t, "
         "permute, expand, unsqueeze, squeeze, contiguous, clone");
    return NULL;
  }
  int k = -1;
  for (int i = 0; i < (int)(sizeof view_ops / sizeof *view_ops); i++)
    if (!strcmp(view_ops[i].name, op)) k = i;
  if (k < 0) {
    diag(x, node(x, *it),
         "unknown view op '%s' (expected one of view, reshape, transpose, t, permute, expand, "
         "unsqueeze, squeeze, contiguous, clone: ops that move no value)",
         op);
    return NULL;
  }
  int n = (int)(end - it) - 1, ok = 1, minus = 0;
  if (n < view_ops[k].min || (view_ops[k].max >= 0 && n > view_ops[k].max)) {
    if (view_ops[k].min == view_ops[k].max)
      diag(x, st, "view op '%s' takes %d integer%s; the step gives %d", op, view_ops[k].min,
           view_ops[k].min == 1 ? "" : "s", n);
    else if (view_ops[k].max < 0)
      diag(x, st, "view op '%s' takes at least %d integer; the step gives %d", op, view_ops[k].min,
           n);
    else
      diag(x, st, "view op '%s' takes %d to %d integers; the step gives %d", op, view_ops[k].min,
           view_ops[k].max, n);
    return NULL;
  }
  json_t *one = json_array();
  json_array_append_new(one, json_string(op));
  int sizes = view_ops[k].sized;
  long long seen[VIEW_MAX_STEPS * 4];
  for (int i = 0; ok && ++it < end; i++) {
    yaml_node_t *a = node(x, *it);
    const char *as = scalar(a);
    char *e = NULL;
    long long v = as ? strtoll(as, &e, 10) : 0;
    if (!as || e == as || *e || v < -(1LL << 40) || v > (1LL << 40)) {
      diag(x, a, "view op '%s': argument %d is not an integer", op, i + 1);
      ok = 0;
    } else if (sizes && v < -1) {
      diag(x, a, "view op '%s': bad size %lld (a size, or -1)", op, v);
      ok = 0;
    } else if (sizes && v == -1 && strcmp(op, "expand") && minus++) {
      diag(x, a, "view op '%s': only one size may be -1", op);
      ok = 0;
    } else if (!strcmp(op, "permute")) {
      for (int j = 0; j < i && j < (int)(sizeof seen / sizeof *seen); j++)
        if (seen[j] == v) {
          diag(x, a, "view op 'permute' names dim %lld twice", v);
          ok = 0;
        }
      if (i < (int)(sizeof seen / sizeof *seen)) seen[i] = v;
    }
    if (ok) json_array_append_new(one, json_integer((json_int_t)v));
  }
  if (!ok) {
    json_decref(one);
    return NULL;
  }
  return one;
}

/* An args entry that names its argument through a view chain:
 * {arg: NAME, view: [[op, int...], ...]}. Returns the argument's name and
 * sets *chain (JSON, the steps in order), or NULL after a diagnostic. */
static const char *view_arg(struct pctx *x, const char *key, yaml_node_t *m, json_t **chain) {
  static const char *const keys[] = {"arg", "view", NULL};
  yaml_node_t *v[2];
  *chain = NULL;
  map_keys(x, m, keys, "args entry", v);
  if (!v[0] || !v[1]) {
    diag(x, m, "args entry '%s': expected {arg: NAME, view: [[op, int...], ...]}", key);
    return NULL;
  }
  if (!strcmp(key, "out")) {
    diag(x, m, "args entry 'out' names the result; it takes no view chain");
    return NULL;
  }
  const char *name = want_scalar(x, v[0], "args entry's arg");
  if (!name || !want_type(x, v[1], YAML_SEQUENCE_NODE, "args entry's view")) return NULL;
  int n = (int)(v[1]->data.sequence.items.top - v[1]->data.sequence.items.start);
  if (n < 1 || n > VIEW_MAX_STEPS) {
    diag(x, v[1], "args entry '%s': view has %d steps (1 to %d)", key, n, VIEW_MAX_STEPS);
    return NULL;
  }
  json_t *all = json_array();
  int ok = 1;
  for (yaml_node_item_t *it = v[1]->data.sequence.items.start; it < v[1]->data.sequence.items.top;
       it++) {
    json_t *one = view_step(x, node(x, *it));
    if (!one) ok = 0;
    if (one) json_array_append_new(all, one);
  }
  if (!ok) {
    json_decref(all);
    return NULL;
  }
  *chain = all;
  return name;
}

/* torch_op: NAME and args: {oracle input: op argument name or position,
 * or {arg: NAME, view: CHAIN}} (the PyTorch binding maps the op's
 * arguments with them, applying the chain). */
static void parse_torch_op(struct pctx *x, struct kc_contract *c, yaml_node_t *nd,
                           yaml_node_t **v) {
  if (v[0] || v[1] || v[6] || v[7])
    diag(x, nd,
         "a torch_op contract names an op, not a kernel: no kernel, params, domain or "
         "launch");
  const char *name = v[9] ? want_scalar(x, v[9], "torch_op") : NULL;
  if (!v[9])
    diag(x, nd, "args without torch_op (expected torch_op: namespace::name)");
  else if (name && !strstr(name, "::"))
    diag(x, v[9], "bad torch_op '%s' (expected namespace::name, e.g. mylib::rmsnorm)", name);
  else if (name)
    c->torch_op = strdup(name);
  if (!v[10] || !want_type(x, v[10], YAML_MAPPING_NODE, "args")) return;
  yaml_node_t *m = v[10];
  size_t np = (size_t)(m->data.mapping.pairs.top - m->data.mapping.pairs.start);
  c->torch_args = calloc(np ? np : 1, sizeof *c->torch_args);
  for (yaml_node_pair_t *pr = m->data.mapping.pairs.start;
       c->torch_args && pr < m->data.mapping.pairs.top; pr++) {
    const char *ks = want_scalar(x, node(x, pr->key), "args key");
    yaml_node_t *val = node(x, pr->value);
    json_t *chain = NULL;
    const char *vs = !ks                              ? NULL
                     : val->type == YAML_MAPPING_NODE ? view_arg(x, ks, val, &chain)
                                                      : want_scalar(x, val, "args value");
    if (!ks || !vs) continue;
    if (chain) {
      if (!c->torch_views) c->torch_views = json_object();
      json_object_set_new(c->torch_views, ks, chain);
    }
    c->torch_args[c->ntorch_args].key = strdup(ks);
    c->torch_args[c->ntorch_args++].value = strdup(vs);
  }
  if (v[8]) parse_torch_shapes(x, c, v[8]);
}

static struct kc_contract *parse_contract(struct pctx *x, yaml_node_t *nd) {
  if (!want_type(x, nd, YAML_MAPPING_NODE, "contract")) return NULL;
  struct kc_contract *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  int before = x->errors;
  x->launch_used = 0;
  c->file = strdup(x->file);
  c->line = NODE_LINE(nd);
  char where[PATH_MAX + 32];
  snprintf(where, sizeof where, "%s:%d", x->file, c->line);
  c->where = strdup(where);
  yaml_node_t *v[12];
  map_keys(x, nd, contract_keys, "contract", v);
  if (v[9] || v[10]) { /* a torch op: no kernel, no params */
    parse_torch_op(x, c, nd, v);
    if (!v[2]) diag(x, nd, "contract has no op (expected op: matmul, softmax, add, ...)");
  } else {
    if (!v[0]) diag(x, nd, "contract has no kernel (expected kernel: {name|glob|regex: ...})");
    if (!v[1]) diag(x, nd, "contract has no params (expected params: [...])");
  }
  if (!v[2]) diag(x, nd, "contract has no op (expected op: matmul, softmax, add, ...)");
  /* Pass 1: scalar names, so expressions may name scalars declared later. */
  for (int i = 0; i < x->nnames; i++)
    free(x->names[i]);
  x->nnames = 0;
  if (v[1] && v[1]->type == YAML_SEQUENCE_NODE) {
    struct kc_contract *keep = x->c;
    x->c = NULL;
    for (yaml_node_item_t *it = v[1]->data.sequence.items.start; it < v[1]->data.sequence.items.top;
         it++) {
      struct kc_contract_value dummy;
      parse_value(x, node(x, *it), 0, &dummy, NULL);
    }
    x->c = keep;
  }
  x->c = c;
  if (v[0]) parse_kernel(x, v[0]);
  if (v[1] && v[1]->type == YAML_SEQUENCE_NODE &&
      v[1]->data.sequence.items.top - v[1]->data.sequence.items.start > KC_CONTRACT_MAX_PARAMS) {
    diag(x, v[1], "more than %d params in one contract", KC_CONTRACT_MAX_PARAMS);
  } else if (v[1] && want_type(x, v[1], YAML_SEQUENCE_NODE, "params")) {
    int np = (int)(v[1]->data.sequence.items.top - v[1]->data.sequence.items.start);
    c->params = calloc((size_t)(np ? np : 1), sizeof *c->params);
    for (int i = 0; c->params && i < np; i++) {
      c->nparams = i + 1;
      parse_value(x, node(x, v[1]->data.sequence.items.start[i]), 0, &c->params[i].v,
                  &c->params[i]);
    }
    for (int i = 0; c->params && i < c->nparams; i++)
      lint_tensor(x, node(x, v[1]->data.sequence.items.start[i]), i, &c->params[i].v);
  }
  if (v[2]) {
    const char *op = want_scalar(x, v[2], "op");
    if (op && !op_known(op)) {
      const char *all[OC_ID_COUNT + 1];
      int n = 0;
      for (int i = 0; i < OC_ID_COUNT; i++)
        all[n++] = oc_op_by_id((enum oc_opid)i)->name;
      all[n] = NULL;
      char list[4096]; /* every op named: ~110 of them, 1.5 KB */
      join(all, list, sizeof list);
      diag(x, v[2], "unknown op '%s' (did you mean '%s'? known: %s)", op, nearest(all, op), list);
    } else if (op) {
      c->op = strdup(op);
    }
  }
  if (v[3]) parse_attrs(x, v[3]);
  if (v[4]) {
    const char *spec = want_scalar(x, v[4], "profile");
    char err[512];
    if (spec && oc_profile_parse_err(spec, &c->profile, err, sizeof err))
      diag(x, v[4], "bad profile '%s': %s", spec, err);
    else if (spec)
      c->profile_spec = strdup(spec);
  }
  if (v[5]) {
    const char *s = want_scalar(x, v[5], "nondeterminism");
    if (s && strcmp(s, "allowed") && strcmp(s, "forbidden"))
      diag(x, v[5], "bad nondeterminism '%s' (expected allowed or forbidden)", s);
    else if (s)
      c->nondeterminism_allowed = !strcmp(s, "allowed");
  }
  if (v[6] && want_type(x, v[6], YAML_SEQUENCE_NODE, "domain")) {
    int n = (int)(v[6]->data.sequence.items.top - v[6]->data.sequence.items.start);
    c->domain = calloc((size_t)(n ? n : 1), sizeof *c->domain);
    for (int i = 0; c->domain && i < n; i++) {
      c->ndomain = i + 1;
      c->domain[i] =
          compile(x, node(x, v[6]->data.sequence.items.start[i]), 1, "domain constraint");
    }
  }
  /* not on a broken contract; a torch_op contract maps operands through its args */
  if (c->op && !c->torch_op && x->errors == before) check_arity(x, c, v[2]);
  c->uses_launch_dims = x->launch_used;
  if (v[7]) parse_launch(x, v[7]);
  if (v[8] && !(v[9] || v[10])) parse_shapes(x, v[8]); /* a torch op's: parse_torch_op */
  if (x->errors != before) {
    kc_contract_free(c);
    return NULL;
  }
  return c;
}

static void parse_document(struct pctx *x) {
  yaml_node_t *root = yaml_document_get_root_node(x->doc);
  if (!root) return;
  if (root->type != YAML_MAPPING_NODE) {
    diag(x, root, "expected a mapping with a 'contracts' list at the top, found %s",
         kind_name(root));
    return;
  }
  yaml_node_t *v[1];
  map_keys(x, root, top_keys, "the top level", v);
  if (!v[0]) {
    diag(x, root, "no 'contracts' key at the top level (expected contracts: [...])");
    return;
  }
  if (!want_type(x, v[0], YAML_SEQUENCE_NODE, "contracts")) return;
  for (yaml_node_item_t *it = v[0]->data.sequence.items.start; it < v[0]->data.sequence.items.top;
       it++) {
    if (x->set->n >= KC_CONTRACT_MAX_CONTRACTS) {
      diag(x, node(x, *it), "more than %d contracts in one set", KC_CONTRACT_MAX_CONTRACTS);
      return;
    }
    struct kc_contract *c = parse_contract(x, node(x, *it));
    if (!c) continue;
    struct kc_contract **cs = realloc(x->set->c, (size_t)(x->set->n + 1) * sizeof *cs);
    if (!cs) {
      kc_contract_free(c);
      continue;
    }
    x->set->c = cs;
    cs[x->set->n++] = c;
  }
}

static int cmp_diag(const void *pa, const void *pb) {
  const struct kc_contract_diag *a = pa, *b = pb;
  if (a->line != b->line) return a->line < b->line ? -1 : 1;
  if (a->col != b->col) return a->col < b->col ? -1 : 1;
  return strcmp(a->msg ? a->msg : "", b->msg ? b->msg : ""); /* qsort is not stable */
}

int kc_contract_parse_text(const char *text, size_t len, const char *source,
                           struct kc_contract_set *set) {
  struct pctx x = {.file = source, .set = set};
  int first_diag = set->ndiags;
  int line = 1, col = 1;
  char msg[160];
  if (kc_contract_yaml_check_limits(text, len, &line, &col, msg, sizeof msg)) {
    diag_at(&x, line, col, "%s", msg);
    return x.errors;
  }
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) {
    diag_at(&x, 1, 1, "cannot initialize the YAML parser");
    return x.errors;
  }
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  for (;;) {
    yaml_document_t doc;
    if (!yaml_parser_load(&parser, &doc)) {
      diag_at(&x, (int)parser.problem_mark.line + 1, (int)parser.problem_mark.column + 1,
              "YAML syntax: %s%s%s", parser.problem ? parser.problem : "error",
              parser.context ? " " : "", parser.context ? parser.context : "");
      break;
    }
    if (!yaml_document_get_root_node(&doc)) {
      yaml_document_delete(&doc);
      break;
    }
    x.doc = &doc;
    parse_document(&x);
    yaml_document_delete(&doc);
  }
  yaml_parser_delete(&parser);
  /* Report in file order, not in the order the checks ran. */
  if (x.errors && set->ndiags >= first_diag)
    qsort(set->diags + first_diag, (size_t)(set->ndiags - first_diag), sizeof *set->diags,
          cmp_diag);
  for (int i = 0; i < x.nnames; i++)
    free(x.names[i]);
  free(x.names);
  return x.errors;
}

static int has_yaml_ext(const char *name) {
  size_t n = strlen(name);
  return (n > 5 && !strcmp(name + n - 5, ".yaml")) || (n > 4 && !strcmp(name + n - 4, ".yml"));
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads a contract file: only a regular file (a FIFO would block forever,
 * /dev/zero never end), opened without blocking, of at most
 * KC_CONTRACT_MAX_FILE_BYTES. */
static int parse_file(const char *path, struct kc_contract_set *set) {
  struct pctx x = {.file = path, .set = set};
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    diag_at(&x, 0, 0, "cannot open: %m");
    return 1;
  }
  struct stat st;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
    close(fd);
    diag_at(&x, 0, 0, "not a regular file: contract paths name files or directories");
    return 1;
  }
  if ((unsigned long long)st.st_size > KC_CONTRACT_MAX_FILE_BYTES) {
    close(fd);
    diag_at(&x, 0, 0, "file is %lld bytes, over the limit of %u bytes for a contract file",
            (long long)st.st_size, KC_CONTRACT_MAX_FILE_BYTES);
    return 1;
  }
  size_t cap = (size_t)st.st_size + 1, len = 0;
  char *buf = malloc(cap);
  while (buf && len < cap - 1) {
    ssize_t got = read(fd, buf + len, cap - 1 - len);
    if (got <= 0) break;
    len += (size_t)got;
  }
  close(fd);
  if (!buf) {
    diag_at(&x, 0, 0, "out of memory reading the file");
    return 1;
  }
  int errors = kc_contract_parse_text(buf, len, path, set);
  free(buf);
  return errors;
}

int kc_contract_parse_path(const char *path, struct kc_contract_set *set) {
  struct stat st;
  if (stat(path, &st) || !S_ISDIR(st.st_mode)) return parse_file(path, set);
  DIR *d = opendir(path);
  if (!d) return parse_file(path, set);
  char **names = NULL;
  int n = 0, errors = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.' || !has_yaml_ext(e->d_name)) continue;
    char **nn = realloc(names, (size_t)(n + 1) * sizeof *nn);
    if (!nn) break;
    names = nn;
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  if (n) qsort(names, (size_t)n, sizeof *names, cmp_str);
  for (int i = 0; i < n; i++) {
    char full[PATH_MAX];
    if (names[i]) {
      snprintf(full, sizeof full, "%s/%s", path, names[i]);
      errors += parse_file(full, set);
    }
    free(names[i]);
  }
  free(names);
  return errors;
}

static void free_tensor(struct kc_contract_tensor *t) {
  for (int i = 0; i < KC_CONTRACT_MAX_RANK; i++) {
    kc_contract_expr_free(t->shape[i]);
    kc_contract_expr_free(t->strides[i]);
  }
}

const char *kc_contract_attr(const struct kc_contract *c, const char *key) {
  for (int i = 0; i < c->nattrs; i++)
    if (!strcmp(c->attrs[i].key, key)) return c->attrs[i].value;
  return NULL;
}

void kc_contract_free(struct kc_contract *c) {
  if (!c) return;
  free(c->file);
  free(c->where);
  free(c->pattern);
  free(c->torch_op);
  json_decref(c->torch_shapes);
  json_decref(c->torch_views);
  for (int i = 0; i < c->ntorch_args; i++) {
    free(c->torch_args[i].key);
    free(c->torch_args[i].value);
  }
  free(c->torch_args);
  if (c->regex) regfree(c->regex);
  free(c->regex);
  for (int i = 0; i < c->nparams; i++) {
    free(c->params[i].v.name);
    free_tensor(&c->params[i].v.tensor);
    for (int j = 0; j < c->params[i].nfields; j++) {
      free(c->params[i].fields[j].name);
      free_tensor(&c->params[i].fields[j].tensor);
    }
    free(c->params[i].fields);
  }
  free(c->params);
  free(c->scalars);
  free(c->op);
  for (int i = 0; i < c->nattrs; i++) {
    free(c->attrs[i].key);
    free(c->attrs[i].value);
  }
  free(c->attrs);
  free(c->profile_spec);
  for (int i = 0; i < c->ndomain; i++)
    kc_contract_expr_free(c->domain[i]);
  free(c->domain);
  for (int i = 0; i < 3; i++) {
    kc_contract_expr_free(c->grid[i]);
    kc_contract_expr_free(c->block[i]);
  }
  kc_contract_expr_free(c->shmem);
  free(c->shapes);
  free(c);
}

void kc_contract_set_free(struct kc_contract_set *set) {
  for (int i = 0; i < set->n; i++)
    kc_contract_free(set->c[i]);
  free(set->c);
  for (int i = 0; i < set->ndiags; i++) {
    free(set->diags[i].file);
    free(set->diags[i].msg);
  }
  free(set->diags);
  memset(set, 0, sizeof *set);
}

void kc_contract_print_diags(const struct kc_contract_set *set, const char *prefix) {
  for (int i = 0; i < set->ndiags; i++) {
    const struct kc_contract_diag *d = &set->diags[i];
    if (d->line > 0)
      fprintf(stderr, "%s%s:%d:%d: error: %s\n", prefix, d->file, d->line, d->col,
              d->msg ? d->msg : "?");
    else
      fprintf(stderr, "%s%s: error: %s\n", prefix, d->file, d->msg ? d->msg : "?");
  }
}
