/* contract/contract_expr.c — the small integer expression language of
 * contracts (shapes, strides, launch dims, domain constraints): a
 * recursive-descent compiler to a node array and a checked evaluator. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract.h"

enum node_op {
  N_NUM,
  N_VAR,
  N_NEG,
  N_NOT,
  N_ADD,
  N_SUB,
  N_MUL,
  N_DIV,
  N_MOD,
  N_EQ,
  N_NE,
  N_LT,
  N_LE,
  N_GT,
  N_GE,
  N_AND,
  N_OR,
  N_CEIL_DIV,
  N_MIN,
  N_MAX,
};

struct node {
  enum node_op op;
  int a, b;    /* operand node indices */
  int64_t val; /* N_NUM: the constant; N_VAR: the scalar index */
  int height;  /* of the subtree: bounds eval_node's recursion */
};

struct kc_contract_expr {
  char *text;
  int n, root;
  struct node *nodes;
};

struct parser {
  const char *s;
  size_t pos;
  int allow_bool;
  kc_contract_expr_lookup_fn lookup;
  void *ctx;
  struct kc_contract_expr *e;
  char *err;
  size_t errn;
  int err_pos;
  int failed;
  int depth; /* current nesting (parentheses, calls, unary operators) */
};

/* Records the first fault only: later ones follow from it. */
__attribute__((format(printf, 3, 4))) static int fail(struct parser *p, size_t pos, const char *fmt,
                                                      ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): va_start just above
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (!p->failed && p->err && p->errn) snprintf(p->err, p->errn, "%s", msg);
  if (!p->failed) p->err_pos = (int)pos;
  p->failed = 1;
  return -1;
}

static int add_node(struct parser *p, enum node_op op, int a, int b, int64_t val) {
  if (p->e->n >= KC_CONTRACT_EXPR_MAX_NODES)
    return fail(p, p->pos, "expression has more than %d operators and operands",
                KC_CONTRACT_EXPR_MAX_NODES);
  int h = 1;
  if (a >= 0 && p->e->nodes[a].height + 1 > h) h = p->e->nodes[a].height + 1;
  if (b >= 0 && p->e->nodes[b].height + 1 > h) h = p->e->nodes[b].height + 1;
  if (h > KC_CONTRACT_EXPR_MAX_TREE)
    return fail(p, p->pos, "expression nests deeper than %d operations", KC_CONTRACT_EXPR_MAX_TREE);
  struct node *nn = realloc(p->e->nodes, (size_t)(p->e->n + 1) * sizeof *nn);
  if (!nn) return fail(p, p->pos, "out of memory");
  p->e->nodes = nn;
  nn[p->e->n] = (struct node){op, a, b, val, h};
  return p->e->n++;
}

static void skip_ws(struct parser *p) {
  while (isspace((unsigned char)p->s[p->pos]))
    p->pos++;
}

/* Consumes tok when it comes next (after blanks). */
static int accept(struct parser *p, const char *tok) {
  skip_ws(p);
  size_t n = strlen(tok);
  if (strncmp(p->s + p->pos, tok, n)) return 0;
  /* "<" must not take the first half of "<=", "!" not of "!=". */
  if (n == 1 && (tok[0] == '<' || tok[0] == '>' || tok[0] == '!' || tok[0] == '=') &&
      p->s[p->pos + 1] == '=')
    return 0;
  p->pos += n;
  return 1;
}

/* A short rendering of what comes next, for messages. */
static void next_token(const struct parser *p, char *buf, size_t n) {
  const char *t = p->s + p->pos;
  if (!*t) {
    snprintf(buf, n, "end of expression");
    return;
  }
  size_t len = 1;
  if (isalnum((unsigned char)*t) || *t == '_')
    while (isalnum((unsigned char)t[len]) || t[len] == '_')
      len++;
  snprintf(buf, n, "'%.*s'", (int)(len > 20 ? 20 : len), t);
}

static int parse_or(struct parser *p);

/* Nesting guard: the parser recurses once per level, so a limit keeps a
 * 100,000-deep "((((" from exhausting the stack. */
static int nest(struct parser *p) {
  if (++p->depth > KC_CONTRACT_EXPR_MAX_DEPTH) {
    fail(p, p->pos, "expression nests deeper than %d levels", KC_CONTRACT_EXPR_MAX_DEPTH);
    return -1;
  }
  return 0;
}

static int nested_or(struct parser *p) {
  if (nest(p)) return -1;
  int r = parse_or(p);
  p->depth--;
  return r;
}

static int parse_primary(struct parser *p) {
  skip_ws(p);
  size_t start = p->pos;
  const char *t = p->s + p->pos;
  if (isdigit((unsigned char)*t)) {
    char *end;
    unsigned long long v = strtoull(t, &end, 0);
    if (isalpha((unsigned char)*end) || *end == '_' || v > (unsigned long long)INT64_MAX)
      return fail(p, start, "bad number '%.*s'", (int)(end - t + 1), t);
    p->pos += (size_t)(end - t);
    return add_node(p, N_NUM, -1, -1, (int64_t)v);
  }
  if (isalpha((unsigned char)*t) || *t == '_') {
    size_t len = 0;
    while (isalnum((unsigned char)t[len]) || t[len] == '_')
      len++;
    /* the launch dimensions, spelled as in CUDA: gridDim.x, blockDim.z */
    if (t[len] == '.' && t[len + 1] && kc_contract_launch_var(t, len + 2) >= 0 &&
        !isalnum((unsigned char)t[len + 2]) && t[len + 2] != '_')
      len += 2;
    p->pos += len;
    skip_ws(p);
    if (p->s[p->pos] == '(') {
      enum node_op op;
      if (len == 8 && !strncmp(t, "ceil_div", 8))
        op = N_CEIL_DIV;
      else if (len == 3 && !strncmp(t, "min", 3))
        op = N_MIN;
      else if (len == 3 && !strncmp(t, "max", 3))
        op = N_MAX;
      else
        return fail(p, start, "unknown function '%.*s' (expected ceil_div, min or max)", (int)len,
                    t);
      p->pos++;
      int a = nested_or(p);
      if (a < 0) return -1;
      if (!accept(p, ",")) {
        char tok[32];
        next_token(p, tok, sizeof tok);
        return fail(p, p->pos, "expected ',' (%.*s takes two arguments), found %s", (int)len, t,
                    tok);
      }
      int b = nested_or(p);
      if (b < 0) return -1;
      if (!accept(p, ")")) {
        char tok[32];
        next_token(p, tok, sizeof tok);
        return fail(p, p->pos, "expected ')' closing %.*s(, found %s", (int)len, t, tok);
      }
      return add_node(p, op, a, b, 0);
    }
    int idx = p->lookup ? p->lookup(p->ctx, t, len) : -1;
    if (idx < 0) return fail(p, start, "unknown scalar '%.*s'", (int)len, t);
    return add_node(p, N_VAR, -1, -1, idx);
  }
  if (*t == '(') {
    p->pos++;
    int a = nested_or(p);
    if (a < 0) return -1;
    if (!accept(p, ")")) {
      char tok[32];
      next_token(p, tok, sizeof tok);
      return fail(p, p->pos, "expected ')', found %s", tok);
    }
    return a;
  }
  char tok[32];
  next_token(p, tok, sizeof tok);
  return fail(p, start, "expected a number, a scalar name or '(', found %s", tok);
}

static int parse_unary(struct parser *p);

static int nested_unary(struct parser *p) {
  if (nest(p)) return -1;
  int r = parse_unary(p);
  p->depth--;
  return r;
}

static int parse_unary(struct parser *p) {
  if (accept(p, "-")) {
    int a = nested_unary(p);
    return a < 0 ? -1 : add_node(p, N_NEG, a, -1, 0);
  }
  if (accept(p, "+")) return nested_unary(p);
  skip_ws(p);
  size_t at = p->pos;
  if (accept(p, "!")) {
    if (!p->allow_bool) return fail(p, at, "'!' is only allowed in domain constraints");
    int a = nested_unary(p);
    return a < 0 ? -1 : add_node(p, N_NOT, a, -1, 0);
  }
  return parse_primary(p);
}

static int parse_mul(struct parser *p) {
  int a = parse_unary(p);
  while (a >= 0) {
    enum node_op op;
    if (accept(p, "*"))
      op = N_MUL;
    else if (accept(p, "/"))
      op = N_DIV;
    else if (accept(p, "%"))
      op = N_MOD;
    else
      break;
    int b = parse_unary(p);
    a = b < 0 ? -1 : add_node(p, op, a, b, 0);
  }
  return a;
}

static int parse_add(struct parser *p) {
  int a = parse_mul(p);
  while (a >= 0) {
    enum node_op op;
    if (accept(p, "+"))
      op = N_ADD;
    else if (accept(p, "-"))
      op = N_SUB;
    else
      break;
    int b = parse_mul(p);
    a = b < 0 ? -1 : add_node(p, op, a, b, 0);
  }
  return a;
}

static int parse_cmp(struct parser *p) {
  int a = parse_add(p);
  if (a < 0) return -1;
  static const struct {
    const char *tok;
    enum node_op op;
  } ops[] = {{"==", N_EQ}, {"!=", N_NE}, {"<=", N_LE}, {">=", N_GE}, {"<", N_LT}, {">", N_GT}};
  skip_ws(p);
  size_t at = p->pos;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (accept(p, ops[i].tok)) {
      if (!p->allow_bool)
        return fail(p, at, "comparison '%s' is only allowed in domain constraints", ops[i].tok);
      int b = parse_add(p);
      return b < 0 ? -1 : add_node(p, ops[i].op, a, b, 0);
    }
  return a;
}

static int parse_and(struct parser *p) {
  int a = parse_cmp(p);
  while (a >= 0) {
    skip_ws(p);
    size_t at = p->pos;
    if (!accept(p, "&&")) break;
    if (!p->allow_bool) return fail(p, at, "'&&' is only allowed in domain constraints");
    int b = parse_cmp(p);
    a = b < 0 ? -1 : add_node(p, N_AND, a, b, 0);
  }
  return a;
}

static int parse_or(struct parser *p) {
  int a = parse_and(p);
  while (a >= 0) {
    skip_ws(p);
    size_t at = p->pos;
    if (!accept(p, "||")) break;
    if (!p->allow_bool) return fail(p, at, "'||' is only allowed in domain constraints");
    int b = parse_and(p);
    a = b < 0 ? -1 : add_node(p, N_OR, a, b, 0);
  }
  return a;
}

void kc_contract_expr_free(struct kc_contract_expr *e) {
  if (!e) return;
  free(e->text);
  free(e->nodes);
  free(e);
}

int kc_contract_launch_var(const char *name, size_t len) {
  static const char *const names[KC_CONTRACT_LAUNCH_VARS] = {
      "gridDim.x", "gridDim.y", "gridDim.z", "blockDim.x", "blockDim.y", "blockDim.z"};
  for (int i = 0; i < KC_CONTRACT_LAUNCH_VARS; i++)
    if (strlen(names[i]) == len && !strncmp(names[i], name, len)) return i;
  return -1;
}

struct kc_contract_expr *kc_contract_expr_compile(const char *text, int allow_bool,
                                                  kc_contract_expr_lookup_fn lookup, void *ctx,
                                                  char *err, size_t n, int *err_pos) {
  struct kc_contract_expr *e = calloc(1, sizeof *e);
  if (!e || !(e->text = strdup(text))) {
    free(e);
    if (err && n) snprintf(err, n, "out of memory");
    if (err_pos) *err_pos = 0;
    return NULL;
  }
  struct parser p = {.s = text,
                     .allow_bool = allow_bool,
                     .lookup = lookup,
                     .ctx = ctx,
                     .e = e,
                     .err = err,
                     .errn = n};
  skip_ws(&p);
  if (!text[p.pos]) fail(&p, 0, "empty expression");
  if (strlen(text) > KC_CONTRACT_EXPR_MAX_LEN)
    fail(&p, KC_CONTRACT_EXPR_MAX_LEN, "expression longer than %d characters",
         KC_CONTRACT_EXPR_MAX_LEN);
  int root = p.failed ? -1 : parse_or(&p);
  if (root >= 0) {
    skip_ws(&p);
    if (text[p.pos]) {
      char tok[32];
      next_token(&p, tok, sizeof tok);
      fail(&p, p.pos, "unexpected %s (expected an operator or end of expression)", tok);
    }
  }
  if (p.failed) {
    if (err_pos) *err_pos = p.err_pos;
    kc_contract_expr_free(e);
    return NULL;
  }
  e->root = root;
  return e;
}

const char *kc_contract_expr_text(const struct kc_contract_expr *e) { return e ? e->text : ""; }

static int eval_node(const struct kc_contract_expr *e, int i, const int64_t *vars, int64_t *out,
                     char *err, size_t n) {
  const struct node *nd = &e->nodes[i];
  if (nd->op == N_NUM) return *out = nd->val, 0;
  if (nd->op == N_VAR) return *out = vars[nd->val], 0;
  int64_t a = 0, b = 0;
  if (eval_node(e, nd->a, vars, &a, err, n)) return -1;
  if (nd->op == N_NEG) {
    if (a == INT64_MIN) goto overflow;
    return *out = -a, 0;
  }
  if (nd->op == N_NOT) return *out = !a, 0;
  /* && and || short-circuit, so "K > 0 && N / K < 8" cannot divide by 0. */
  if (nd->op == N_AND && !a) return *out = 0, 0;
  if (nd->op == N_OR && a) return *out = 1, 0;
  if (eval_node(e, nd->b, vars, &b, err, n)) return -1;
  switch (nd->op) {
  case N_ADD:
    if (__builtin_add_overflow(a, b, out)) goto overflow;
    return 0;
  case N_SUB:
    if (__builtin_sub_overflow(a, b, out)) goto overflow;
    return 0;
  case N_MUL:
    if (__builtin_mul_overflow(a, b, out)) goto overflow;
    return 0;
  case N_DIV:
  case N_MOD:
  case N_CEIL_DIV:
    if (b == 0) {
      if (err && n) snprintf(err, n, "division by zero in '%s'", e->text);
      return -1;
    }
    if (a == INT64_MIN && b == -1) goto overflow;
    if (nd->op == N_DIV) return *out = a / b, 0;
    if (nd->op == N_MOD) return *out = a % b, 0;
    /* Rounds toward +infinity for either sign. */
    *out = a / b + ((a % b != 0) && ((a < 0) == (b < 0)));
    return 0;
  case N_EQ: return *out = a == b, 0;
  case N_NE: return *out = a != b, 0;
  case N_LT: return *out = a < b, 0;
  case N_LE: return *out = a <= b, 0;
  case N_GT: return *out = a > b, 0;
  case N_GE: return *out = a >= b, 0;
  case N_AND:
  case N_OR: return *out = b != 0, 0;
  case N_MIN: return *out = a < b ? a : b, 0;
  case N_MAX: return *out = a > b ? a : b, 0;
  default: break;
  }
overflow:
  if (err && n) snprintf(err, n, "integer overflow in '%s'", e->text);
  return -1;
}

int kc_contract_expr_eval(const struct kc_contract_expr *e, const int64_t *vars, int64_t *out,
                          char *err, size_t n) {
  if (!e || e->root < 0) {
    if (err && n) snprintf(err, n, "no expression");
    return -1;
  }
  return eval_node(e, e->root, vars, out, err, n);
}

/* ------------------------------------------------------------ lint */

/* Bounds [lo, hi] of a subtree when every scalar is >= 0 (what shapes are
 * written for); saturating, so no evaluation can overflow. */
struct range {
  long double lo, hi;
};

static struct range range_of(const struct kc_contract_expr *e, int i) {
  const struct node *nd = &e->nodes[i];
  const long double inf = 1e30L;
  struct range all = {-inf, inf}, a = all, b = all;
  if (nd->op == N_NUM) return (struct range){(long double)nd->val, (long double)nd->val};
  if (nd->op == N_VAR) return (struct range){0, inf};
  if (nd->a >= 0) a = range_of(e, nd->a);
  if (nd->b >= 0) b = range_of(e, nd->b);
  switch (nd->op) {
  case N_NEG: return (struct range){-a.hi, -a.lo};
  case N_ADD: return (struct range){a.lo + b.lo, a.hi + b.hi};
  case N_SUB: return (struct range){a.lo - b.hi, a.hi - b.lo};
  case N_MUL:
    if (a.lo >= 0 && b.lo >= 0) return (struct range){a.lo * b.lo, a.hi * b.hi};
    return all;
  case N_DIV:
  case N_CEIL_DIV:
    if (a.lo >= 0 && b.lo > 0) return (struct range){0, a.hi};
    if (a.hi <= 0 && b.lo > 0) return (struct range){a.lo, 0};
    return all;
  case N_MIN: return (struct range){a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi};
  case N_MAX: return (struct range){a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
  default: return all;
  }
}

int kc_contract_expr_never_positive(const struct kc_contract_expr *e, int64_t *at_most) {
  if (!e || e->root < 0) return 0;
  struct range r = range_of(e, e->root);
  if (r.hi > 0) return 0;
  *at_most = r.hi < -9e18L ? INT64_MIN : (int64_t)r.hi;
  return 1;
}
