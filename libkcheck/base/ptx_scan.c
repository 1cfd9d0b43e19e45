/* libkcheck/base/ptx_scan.c — finding a kernel in a PTX module and reading what
 * the intra-block strategies and the nondeterminism gate need from it. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx.h"

/* Offset just past the brace matching the one at open, skipping comments;
 * 0 when unbalanced. */
static size_t match_brace(const char *p, size_t open) {
  int depth = 0;
  for (size_t i = open; p[i]; i++) {
    if (p[i] == '/' && p[i + 1] == '/') {
      while (p[i] && p[i] != '\n')
        i++;
      if (!p[i]) break;
    } else if (p[i] == '/' && p[i + 1] == '*') {
      const char *e = strstr(p + i + 2, "*/");
      if (!e) break;
      i = (size_t)(e - p) + 1;
    } else if (p[i] == '{') {
      depth++;
    } else if (p[i] == '}' && --depth == 0) {
      return i + 1;
    }
  }
  return 0;
}

int kc_ptx_find_entry(const char *ptx, const char *name, struct kc_ptx_span *sp) {
  size_t nlen = strlen(name);
  for (const char *at = strstr(ptx, ".entry"); at; at = strstr(at + 6, ".entry")) {
    const char *q = at + 6;
    if (!isspace((unsigned char)*q)) continue;
    while (isspace((unsigned char)*q))
      q++;
    if (strncmp(q, name, nlen) || (q[nlen] != '(' && !isspace((unsigned char)q[nlen]))) continue;
    const char *open = strchr(q + nlen, '(');
    const char *close = open ? strchr(open, ')') : NULL;
    const char *brace = close ? strchr(close, '{') : NULL;
    const char *semi = close ? strchr(close, ';') : NULL;
    if (!brace || (semi && semi < brace)) continue; /* a declaration, no body */
    size_t end = match_brace(ptx, (size_t)(brace - ptx));
    if (!end) return -1;
    const char *line = at;
    while (line > ptx && line[-1] != '\n')
      line--;
    sp->start = (size_t)(line - ptx);
    sp->body = (size_t)(brace - ptx) + 1;
    sp->end = end;
    return 0;
  }
  return -1;
}

/* ------------------------------------------------------------- atomics */

#define MAX_TAINT 256
struct taint {
  char reg[MAX_TAINT][24];
  int n;
};

static int tainted(const struct taint *t, const char *reg, size_t len) {
  for (int i = 0; i < t->n; i++)
    if (strlen(t->reg[i]) == len && !memcmp(t->reg[i], reg, len)) return 1;
  return 0;
}

static int add_taint(struct taint *t, const char *reg, size_t len) {
  if (len == 0 || len >= sizeof t->reg[0] || tainted(t, reg, len) || t->n == MAX_TAINT) return 0;
  memcpy(t->reg[t->n], reg, len);
  t->reg[t->n++][len] = 0;
  return 1;
}

/* Length of the register token at p ("%rd12"; special registers such as
 * %tid.x are never tainted and end at the dot). */
static size_t reg_len(const char *p) {
  if (*p != '%') return 0;
  size_t n = 1;
  while (isalnum((unsigned char)p[n]) || p[n] == '_')
    n++;
  return n;
}

/* Does [s, e) mention a tainted register? */
static int mentions(const struct taint *t, const char *s, const char *e) {
  for (const char *p = s; p < e; p++)
    if (*p == '%') {
      size_t n = reg_len(p);
      if (n > 1 && tainted(t, p, n)) return 1;
      p += n ? n - 1 : 0;
    }
  return 0;
}

/* One statement of a body: its opcode and operands, predicate skipped. */
struct stmt {
  const char *op, *op_end, *args, *end; /* end: the ';' */
};

static int next_stmt(const char **cursor, const char *limit, struct stmt *s) {
  const char *p = *cursor;
  while (p < limit) {
    const char *eol = memchr(p, '\n', (size_t)(limit - p));
    if (!eol) eol = limit;
    const char *q = p;
    while (q < eol && isspace((unsigned char)*q))
      q++;
    p = eol + 1;
    if (q >= eol || *q == '/' || *q == '.' || *q == '{' || *q == '}' || *q == '$') continue;
    if (*q == '@') { /* predicate */
      while (q < eol && !isspace((unsigned char)*q))
        q++;
      while (q < eol && isspace((unsigned char)*q))
        q++;
    }
    const char *semi = memchr(q, ';', (size_t)(eol - q));
    if (!semi) continue; /* a label or something not a statement */
    s->op = q;
    while (q < semi && !isspace((unsigned char)*q))
      q++;
    s->op_end = q;
    s->args = q;
    s->end = semi;
    *cursor = p;
    return 1;
  }
  *cursor = limit;
  return 0;
}

static int op_is(const struct stmt *s, const char *prefix) {
  size_t n = strlen(prefix);
  return (size_t)(s->op_end - s->op) >= n && !memcmp(s->op, prefix, n);
}

static int op_has(const struct stmt *s, const char *part) {
  size_t n = strlen(part);
  for (const char *p = s->op; p + n <= s->op_end; p++)
    if (!memcmp(p, part, n)) return 1;
  return 0;
}

/* The first operand (a destination register) of s. */
static const char *first_reg(const struct stmt *s, size_t *len) {
  const char *p = s->args;
  while (p < s->end && isspace((unsigned char)*p))
    p++;
  *len = reg_len(p);
  return *len > 1 ? p : NULL;
}

static int is_float_add(const struct stmt *s) {
  return (op_is(s, "atom.") || op_is(s, "red.")) && op_has(s, ".add") &&
         (op_has(s, ".f16") || op_has(s, ".bf16") || op_has(s, ".f32") || op_has(s, ".f64"));
}

static void note_first(struct kc_ptx_atomics *a, const struct stmt *s) {
  if (a->first[0]) return;
  int n = (int)(s->end - s->op);
  snprintf(a->first, sizeof a->first, "%.*s", n, s->op);
}

void kc_ptx_scan_atomics(const char *ptx, const struct kc_ptx_span *sp, struct kc_ptx_atomics *a) {
  memset(a, 0, sizeof *a);
  const char *body = ptx + sp->body, *limit = ptx + sp->end;
  struct taint *t = calloc(1, sizeof *t);
  if (!t) return;
  struct stmt s;
  /* Sources of taint: the results of atom (red has none). */
  for (const char *c = body; next_stmt(&c, limit, &s);) {
    if (!op_is(&s, "atom.")) continue;
    size_t n;
    const char *r = first_reg(&s, &n);
    if (r) add_taint(t, r, n);
  }
  /* Propagation through every instruction with a destination, to a fixed
   * point (bodies are not in SSA form: loops reuse registers). */
  for (int pass = 0, changed = t->n > 0; changed && pass < 32; pass++) {
    changed = 0;
    for (const char *c = body; next_stmt(&c, limit, &s);) {
      if (op_is(&s, "st.") || op_is(&s, "red.") || op_is(&s, "bra") || op_is(&s, "bar.") ||
          op_is(&s, "ret") || op_is(&s, "setp."))
        continue;
      size_t n;
      const char *r = first_reg(&s, &n);
      if (r && mentions(t, r + n, s.end)) changed |= add_taint(t, r, n);
    }
  }
  for (const char *c = body; next_stmt(&c, limit, &s);) {
    int atomic = op_is(&s, "atom.") || op_is(&s, "red.");
    if (is_float_add(&s)) {
      a->float_adds++;
      note_first(a, &s);
      continue;
    }
    if (!atomic && !op_is(&s, "st.")) continue;
    const char *lb = memchr(s.args, '[', (size_t)(s.end - s.args));
    const char *rb = lb ? memchr(lb, ']', (size_t)(s.end - lb)) : NULL;
    if (lb && rb && mentions(t, lb, rb)) {
      a->slot_atomics++;
      note_first(a, &s);
    } else if (atomic) {
      a->other_atomics++;
    }
  }
  free(t);
}

/* ---------------------------------------------------- module variables */

int kc_ptx_module_vars(const char *ptx, char (*names)[128], int max) {
  /* depth: inside a function body; paren: inside a parameter list, whose
   * pointer parameters Triton declares ".param .u64 .ptr .global .align 1
   * name": not module variables */
  int n = 0, depth = 0, paren = 0;
  for (const char *line = ptx; line && *line;) {
    const char *eol = strchr(line, '\n');
    size_t len = eol ? (size_t)(eol - line) : strlen(line);
    char buf[512];
    snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf - 1 ? len : sizeof buf - 1), line);
    char *cm = strstr(buf, "//");
    if (cm) *cm = 0;
    if (depth == 0 &&
        (strstr(buf, ".texref") || strstr(buf, ".surfref") || strstr(buf, ".samplerref")))
      return -1;
    if (depth == 0 && paren == 0 && !strstr(buf, ".extern") && !strstr(buf, ".entry") &&
        !strstr(buf, ".func") && (strstr(buf, ".global ") || strstr(buf, ".const "))) {
      /* ".visible .global .align 4 .b8 name[16] = {...};": the name is the
       * first token that is neither a directive nor a number */
      char *tok = strtok(buf, " \t;[=");
      while (tok && (tok[0] == '.' || isdigit((unsigned char)tok[0])))
        tok = strtok(NULL, " \t;[=");
      if (tok && n < max) snprintf(names[n++], 128, "%s", tok);
    }
    for (size_t i = 0; i < len; i++) {
      if (line[i] == '/' && i + 1 < len && line[i + 1] == '/') break;
      depth += line[i] == '{' ? 1 : line[i] == '}' ? -1 : 0;
      paren += line[i] == '(' ? 1 : line[i] == ')' ? -1 : 0;
    }
    if (depth < 0) depth = 0;
    if (paren < 0) paren = 0;
    line = eol ? eol + 1 : NULL;
  }
  return n;
}
