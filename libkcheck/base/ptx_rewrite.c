/* libkcheck/base/ptx_rewrite.c — the perturbed copy of one kernel. Each warp
 * gets a pseudo-random state from (seed, block, warp); before every memory
 * access and barrier the state steps and, with the configured probability,
 * the warp sleeps (nanosleep: the scheduler runs other warps meanwhile) for
 * a random time under the configured mask. The state is uniform within a
 * warp, so warps stay converged and only their interleaving changes. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx.h"

struct buf {
  char *p;
  size_t n, cap;
  int failed;
};

static void put(struct buf *b, const char *s, size_t n) {
  if (b->failed) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + n + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->failed = 1;
      return;
    }
    b->p = p, b->cap = cap;
  }
  if (!b->p) return; /* not reached: the growth above allocated it */
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}
static void puts_(struct buf *b, const char *s) { put(b, s, strlen(s)); }

/* Registers of the instrumentation (names no compiler emits). */
static const char prologue[] =
    "\t.reg .b32 %kcs, %kct, %kcu, %kcpm, %kcpb, %kcmk;\n"
    "\t.reg .pred %kcq;\n"
    /* the access log: thread id, barrier and warp-barrier epochs, the
     * log's pointer, capacity and scratch, its predicate (block 0, on) */
    "\t.reg .b32 %kcid, %kcep, %kcwe, %kcn, %kca, %kccp;\n"
    "\t.reg .b64 %kcbf, %kcof;\n"
    "\t.reg .pred %kclg, %kcq2;\n"
    /* block index, the thread's event count, its last logged site and
     * address (a spin loop is logged once), the access's space bit and
     * address */
    "\t.reg .b32 %kcbk, %kcsq, %kcls, %kcsp;\n"
    "\t.reg .b64 %kcga, %kcla;\n"
    "\tmov.u32 %kcep, 0;\n\tmov.u32 %kcwe, 0;\n"
    "\tmov.u32 %kcsq, 0;\n\tmov.u32 %kcls, 0xffffffff;\n\tmov.u64 %kcla, 0;\n"
    "\tld.global.u32 %kcs, [" KC_PTX_CFG "];\n"
    "\tld.global.u32 %kcpm, [" KC_PTX_CFG "+4];\n"
    "\tld.global.u32 %kcpb, [" KC_PTX_CFG "+8];\n"
    "\tld.global.u32 %kcmk, [" KC_PTX_CFG "+12];\n"
    /* warp index within the block */
    "\tmov.u32 %kct, %tid.z;\n\tmov.u32 %kcu, %ntid.y;\n\tmul.lo.u32 %kct, %kct, %kcu;\n"
    "\tmov.u32 %kcu, %tid.y;\n\tadd.u32 %kct, %kct, %kcu;\n\tmov.u32 %kcu, %ntid.x;\n"
    "\tmul.lo.u32 %kct, %kct, %kcu;\n\tmov.u32 %kcu, %tid.x;\n\tadd.u32 %kct, %kct, %kcu;\n"
    "\tmov.u32 %kcid, %kct;\n"
    "\tshr.u32 %kct, %kct, 5;\n"
    "\tmad.lo.u32 %kcs, %kct, 0x9E3779B1, %kcs;\n"
    /* block index within the grid */
    "\tmov.u32 %kct, %ctaid.z;\n\tmov.u32 %kcu, %nctaid.y;\n\tmul.lo.u32 %kct, %kct, %kcu;\n"
    "\tmov.u32 %kcu, %ctaid.y;\n\tadd.u32 %kct, %kct, %kcu;\n\tmov.u32 %kcu, %nctaid.x;\n"
    "\tmul.lo.u32 %kct, %kct, %kcu;\n\tmov.u32 %kcu, %ctaid.x;\n\tadd.u32 %kct, %kct, %kcu;\n"
    "\tmad.lo.u32 %kcs, %kct, 0x85EBCA77, %kcs;\n"
    /* logging: on, and the block one the stride samples */
    "\tmov.u32 %kcbk, %kct;\n"
    "\tld.global.u32 %kcu, [" KC_PTX_CFG "+44];\n"
    "\tmax.u32 %kcu, %kcu, 1;\n"
    "\trem.u32 %kcu, %kct, %kcu;\n"
    "\tsetp.eq.u32 %kclg, %kcu, 0;\n"
    "\tld.global.u32 %kcu, [" KC_PTX_CFG "+24];\n"
    "\tsetp.ne.and.u32 %kclg, %kcu, 0, %kclg;\n"
    "\tld.global.u32 %kcu, [" KC_PTX_CFG "+28];\n"
    "\tld.global.u32 %kcn, [" KC_PTX_CFG "+32];\n"
    "\tmov.b64 %kcbf, {%kcu, %kcn};\n"
    "\tld.global.u32 %kccp, [" KC_PTX_CFG "+36];\n"
    /* the block's start delay: a hash of the seed and the block alone */
    "\tld.global.u32 %kcu, [" KC_PTX_CFG "];\n"
    "\tmad.lo.u32 %kcu, %kct, 0x9E3779B1, %kcu;\n"
    "\tshr.u32 %kct, %kcu, 15;\n\txor.b32 %kcu, %kcu, %kct;\n\tmul.lo.u32 %kcu, %kcu, 0x2C1B3C6D;\n"
    "\tshr.u32 %kct, %kcu, 12;\n\txor.b32 %kcu, %kcu, %kct;\n"
    "\tld.global.u32 %kct, [" KC_PTX_CFG "+20];\n"
    "\tand.b32 %kct, %kcu, %kct;\n"
    "\tsetp.ne.u32 %kcq, %kct, 0;\n"
    "\t@%kcq nanosleep.u32 %kct;\n"
    /* a 32-bit mix (lowbias32), so neighbouring warps get unrelated states */
    "\tshr.u32 %kct, %kcs, 16;\n\txor.b32 %kcs, %kcs, %kct;\n\tmul.lo.u32 %kcs, %kcs, 0x7FEB352D;\n"
    "\tshr.u32 %kct, %kcs, 15;\n\txor.b32 %kcs, %kcs, %kct;\n\tmul.lo.u32 %kcs, %kcs, 0x846CA68B;\n"
    "\tshr.u32 %kct, %kcs, 16;\n\txor.b32 %kcs, %kcs, %kct;\n"
    /* the warp's start delay */
    "\tld.global.u32 %kcu, [" KC_PTX_CFG "+16];\n"
    "\tand.b32 %kct, %kcs, %kcu;\n"
    "\tsetp.ne.u32 %kcq, %kct, 0;\n"
    "\t@%kcq nanosleep.u32 %kct;\n";

/* One site: step the state (an LCG), test the probability with the top
 * byte, sleep for the middle bits under the mask. */
static void site(struct buf *b, int barrier) {
  puts_(b, "\tmad.lo.u32 %kcs, %kcs, 1664525, 1013904223;\n"
           "\tshr.u32 %kct, %kcs, 24;\n");
  puts_(b, barrier ? "\tsetp.lt.u32 %kcq, %kct, %kcpb;\n" : "\tsetp.lt.u32 %kcq, %kct, %kcpm;\n");
  puts_(b, "\tshr.u32 %kct, %kcs, 4;\n"
           "\tand.b32 %kct, %kct, %kcmk;\n"
           "\t@%kcq nanosleep.u32 %kct;\n");
}

/* What the statement on a line is: 0 other, 1 memory access, 2 barrier. */
static int classify(const char *line, const char *eol) {
  const char *q = line;
  while (q < eol && isspace((unsigned char)*q))
    q++;
  if (q < eol && *q == '@') {
    while (q < eol && !isspace((unsigned char)*q))
      q++;
    while (q < eol && isspace((unsigned char)*q))
      q++;
  }
  const char *op = q;
  while (q < eol && !isspace((unsigned char)*q) && *q != ';')
    q++;
  size_t n = (size_t)(q - op);
  char o[64];
  if (n == 0 || n >= sizeof o || !memchr(op, ';', (size_t)(eol - op))) return 0;
  memcpy(o, op, n);
  o[n] = 0;
  if (!strncmp(o, "bar.", 4) || !strncmp(o, "barrier.", 8) || !strcmp(o, "bar")) return 2;
  /* fences of GPU or system scope (__threadfence, __threadfence_system,
   * cuda::atomic_thread_fence): they order accesses between blocks */
  if (!strcmp(o, "membar.gl") || !strcmp(o, "membar.sys") ||
      (!strncmp(o, "fence.", 6) && !strstr(o, "proxy") && (strstr(o, ".gpu") || strstr(o, ".sys"))))
    return 3;
  int mem = !strncmp(o, "ld.", 3) || !strncmp(o, "ldu.", 4) || !strncmp(o, "st.", 3) ||
            !strncmp(o, "atom.", 5) || !strncmp(o, "red.", 4) || !strncmp(o, "ldmatrix", 8);
  if (!mem) return 0;
  /* kernel parameters, the thread's own stack and constants cannot race */
  if (strstr(o, ".param") || strstr(o, ".local") || strstr(o, ".const")) return 0;
  return 1;
}

/* The statement of a line: predicate (without '@', "" if none), opcode,
 * the text up to ';'. 0 when the line holds no statement. */
struct line_stmt {
  char pred[32], op[64], text[160];
};
static int parse_line(const char *line, const char *eol, struct line_stmt *st) {
  const char *q = line;
  memset(st, 0, sizeof *st);
  while (q < eol && isspace((unsigned char)*q))
    q++;
  const char *semi = memchr(q, ';', (size_t)(eol - q));
  if (!semi) return 0;
  snprintf(st->text, sizeof st->text, "%.*s", (int)(semi - q), q);
  if (*q == '@') {
    const char *p = ++q;
    while (q < semi && !isspace((unsigned char)*q))
      q++;
    snprintf(st->pred, sizeof st->pred, "%.*s", (int)(q - p), p);
    while (q < semi && isspace((unsigned char)*q))
      q++;
  }
  const char *op = q;
  while (q < semi && !isspace((unsigned char)*q))
    q++;
  snprintf(st->op, sizeof st->op, "%.*s", (int)(q - op), op);
  return 1;
}

/* Bytes an access of opcode op moves (its last type suffix, times the
 * vector width); 0 when unknown. */
static unsigned access_size(const char *op) {
  unsigned size = 0, vec = strstr(op, ".v4") ? 4 : strstr(op, ".v2") ? 2 : 1;
  for (const char *p = strchr(op, '.'); p; p = strchr(p + 1, '.')) {
    if ((p[1] == 'b' || p[1] == 'u' || p[1] == 's' || p[1] == 'f') && isdigit((unsigned char)p[2]))
      size = (unsigned)atoi(p + 2) / 8;
    else if (!strncmp(p, ".bf16", 5))
      size = 2;
  }
  return size * vec;
}

/* The record of one event into the log: address in %kcga, space bit in
 * %kcsp; bits: kind << 16 | size << 20. Ends with the site's label. */
static void record(struct buf *b, int site, unsigned bits) {
  char l[1024];
  snprintf(l, sizeof l,
           "\tatom.global.add.u32 %%kcn, [" KC_PTX_CFG "+40], 1;\n"
           "\tadd.u32 %%kcsq, %%kcsq, 1;\n"
           "\tsetp.ge.u32 %%kcq2, %%kcn, %%kccp;\n"
           "\t@%%kcq2 bra $Lkc_log_%d;\n"
           "\tmul.wide.u32 %%kcof, %%kcn, 32;\n"
           "\tadd.s64 %%kcof, %%kcbf, %%kcof;\n"
           "\tor.b32 %%kcn, %%kcid, %u;\n"
           "\tor.b32 %%kcn, %%kcn, %%kcsp;\n"
           "\tshl.b32 %%kct, %%kcwe, 16;\n"
           "\tor.b32 %%kct, %%kct, %%kcep;\n"
           "\tmov.b64 {%%kca, %%kcu}, %%kcga;\n"
           "\tst.global.v4.u32 [%%kcof], {%%kca, %%kcu, %%kcn, %%kct};\n"
           "\tmov.u32 %%kcu, %d;\n"
           "\tmov.u32 %%kct, 0;\n"
           "\tst.global.v4.u32 [%%kcof+16], {%%kcbk, %%kcu, %%kcsq, %%kct};\n"
           "$Lkc_log_%d:\n",
           site, bits, site, site);
  puts_(b, l);
}

/* Skips to the site's label unless this block logs and the statement's own
 * predicate holds. */
static void log_guard(struct buf *b, const struct line_stmt *st, int site) {
  char l[256];
  snprintf(l, sizeof l, "\t@!%%kclg bra $Lkc_log_%d;\n", site);
  puts_(b, l);
  if (st->pred[0]) {
    snprintf(l, sizeof l, "\t@%s%s bra $Lkc_log_%d;\n", st->pred[0] == '!' ? "" : "!",
             st->pred[0] == '!' ? st->pred + 1 : st->pred, site);
    puts_(b, l);
  }
}

/* A fence record (a release when an atomic or strong write follows). */
static void log_fence(struct buf *b, const struct line_stmt *st, int site) {
  char l[128];
  log_guard(b, st, site);
  snprintf(l, sizeof l, "\tmov.u64 %%kcga, 0;\n\tmov.u32 %%kcsp, %u;\n", KC_ACC_GLOBAL);
  puts_(b, l);
  record(b, site, (unsigned)KC_ACC_FENCE << 16);
}

static int has(const char *op, const char *part) { return strstr(op, part) != NULL; }

/* The record of a shared, global or generic access, when logging is on in
 * this block and the statement's own predicate holds. Returns how many
 * sites it used (a release atomic or store: its fence, then itself), 0
 * when the statement is not logged. */
static int log_site(struct buf *b, const struct line_stmt *st, int site) {
  const char *op = st->op;
  if (has(op, "ldmatrix") || has(op, "stmatrix") || !strncmp(op, "cp.", 3) || has(op, ".async") ||
      has(op, "::cluster") || has(op, ".param") || has(op, ".local") || has(op, ".const") ||
      has(op, ".tex") || has(op, ".surf") || has(op, "prefetch"))
    return 0;
  int space = has(op, ".shared") ? 0 : has(op, ".global") ? 1 : 2; /* 2: generic */
  int strong = has(op, ".volatile") || has(op, ".relaxed") || has(op, ".acquire") ||
               has(op, ".release") || has(op, ".acq_rel");
  int release = has(op, ".release") || has(op, ".acq_rel");
  int kind = !strncmp(op, "ld", 2)    ? (strong ? KC_ACC_SREAD : KC_ACC_READ)
             : !strncmp(op, "st.", 3) ? (strong ? KC_ACC_SWRITE : KC_ACC_WRITE)
                                      : KC_ACC_ATOMIC;
  unsigned size = access_size(op);
  const char *lb = strchr(st->text, '['), *rb = lb ? strchr(lb, ']') : NULL;
  if (!size || size > 16 || !lb || !rb) return 0;
  char addr[96], base[96], off[32] = "";
  snprintf(addr, sizeof addr, "%.*s", (int)(rb - lb - 1), lb + 1);
  char *plus = strchr(addr, '+');
  if (plus) {
    snprintf(off, sizeof off, "%s", plus + 1);
    *plus = 0;
  }
  char *bs = addr;
  while (isspace((unsigned char)*bs))
    bs++;
  snprintf(base, sizeof base, "%s", bs);
  for (char *p = base + strlen(base); p > base && isspace((unsigned char)p[-1]);)
    *--p = 0;
  int reg = base[0] == '%', wide = !strncmp(base, "%rd", 3);
  if (!base[0] || isdigit((unsigned char)base[0]) || (space == 2 && !reg)) return 0;
  int used = 0;
  if (release && space != 0) {
    log_fence(b, st, site);
    used++, site++;
  }
  char l[512];
  log_guard(b, st, site);
  if (space == 0 && !wide) { /* a 32-bit shared-window address */
    snprintf(l, sizeof l, "\tmov.u32 %%kca, %s;\n\tcvt.u64.u32 %%kcga, %%kca;\n", base);
  } else if (reg && !wide) {
    snprintf(l, sizeof l, "\tcvt.u64.u32 %%kcga, %s;\n", base);
  } else {
    snprintf(l, sizeof l, "\tmov.u64 %%kcga, %s;\n", base);
  }
  puts_(b, l);
  if (off[0]) {
    snprintf(l, sizeof l, "\tadd.s64 %%kcga, %%kcga, %s;\n", off);
    puts_(b, l);
  }
  if (space == 2) { /* generic: global, shared (to its window) or neither (not logged) */
    snprintf(l, sizeof l,
             "\tisspacep.global %%kcq2, %%kcga;\n"
             "\tselp.u32 %%kcsp, %u, 0, %%kcq2;\n"
             "\t@%%kcq2 bra $Lkc_sp_%d;\n"
             "\tisspacep.shared %%kcq2, %%kcga;\n"
             "\t@!%%kcq2 bra $Lkc_log_%d;\n"
             "\tcvta.to.shared.u64 %%kcga, %%kcga;\n"
             "$Lkc_sp_%d:\n",
             KC_ACC_GLOBAL, site, site, site);
  } else {
    snprintf(l, sizeof l, "\tmov.u32 %%kcsp, %u;\n", space ? KC_ACC_GLOBAL : 0);
  }
  puts_(b, l);
  snprintf(l, sizeof l,
           "\tsetp.eq.u32 %%kcq2, %%kcls, %d;\n"
           "\tsetp.eq.and.u64 %%kcq2, %%kcla, %%kcga, %%kcq2;\n"
           "\t@%%kcq2 bra $Lkc_log_%d;\n"
           "\tmov.u32 %%kcls, %d;\n"
           "\tmov.u64 %%kcla, %%kcga;\n",
           site, site, site);
  puts_(b, l);
  record(b, site, (unsigned)kind << 16 | size << 20);
  return used + 1;
}

/* After a barrier: the thread's epoch moves on (bar.warp.sync: the warp's). */
static void epoch_step(struct buf *b, const struct line_stmt *st) {
  puts_(b, "\tmov.u32 %kcls, 0xffffffff;\n");
  if (!strncmp(st->op, "bar.warp.sync", 13))
    puts_(b, "\tadd.u32 %kcwe, %kcwe, 1;\n");
  else if (!strncmp(st->op, "bar.sync", 8) || !strncmp(st->op, "barrier.sync", 12) ||
           !strncmp(st->op, "bar.red", 7) || !strncmp(st->op, "barrier.red", 11) ||
           !strncmp(st->op, "barrier.cta.sync", 16) || !strncmp(st->op, "barrier.cta.red", 15) ||
           !strncmp(st->op, "bar.cta.sync", 12))
    puts_(b, "\tadd.u32 %kcep, %kcep, 1;\n");
}

/* The source file names of the module's .file directives (by number). */
#define MAX_FILES 64
struct files {
  char name[MAX_FILES][96];
};
static void read_files(const char *ptx, struct files *f) {
  memset(f, 0, sizeof *f);
  for (const char *p = strstr(ptx, ".file"); p; p = strstr(p + 5, ".file")) {
    int n = atoi(p + 5);
    const char *q1 = strchr(p, '"'), *nl = strchr(p, '\n');
    const char *q2 = q1 ? strchr(q1 + 1, '"') : NULL;
    if (n <= 0 || n >= MAX_FILES || !q1 || !q2 || (nl && q1 > nl)) continue;
    const char *base = q1 + 1;
    for (const char *s = base; s < q2; s++)
      if (*s == '/') base = s + 1;
    snprintf(f->name[n], sizeof f->name[n], "%.*s", (int)(q2 - base), base);
  }
}

static void add_site(struct kc_ptx_sites *out, const struct line_stmt *st, const struct files *f,
                     int file, int lineno) {
  if (!out) return;
  char **t = realloc(out->text, (size_t)(out->n + 1) * sizeof *t);
  if (!t) return;
  out->text = t;
  char s[320];
  if (file > 0 && file < MAX_FILES && f->name[file][0])
    snprintf(s, sizeof s, "%s (%s:%d)", st->text, f->name[file], lineno);
  else
    snprintf(s, sizeof s, "%s", st->text);
  t[out->n++] = strdup(s);
}

void kc_ptx_sites_free(struct kc_ptx_sites *s) {
  for (int i = 0; s && i < s->n; i++)
    free(s->text[i]);
  if (s) free(s->text);
  if (s) memset(s, 0, sizeof *s);
}

/* The first statement line inside the body (after its declarations):
 * registers are declared before any code that uses them. */
static char *instrument(const char *body, const char *end, struct buf *b, int *sites,
                        struct kc_ptx_sites *logged, const struct files *files) {
  int file = 0, lineno = 0, nlog = 0;
  int in_call = 0; /* brace depth inside the body */
  puts_(b, prologue);
  for (const char *line = body; line < end;) {
    const char *eol = memchr(line, '\n', (size_t)(end - line));
    eol = eol ? eol + 1 : end;
    const char *q = line;
    while (q < eol && isspace((unsigned char)*q))
      q++;
    /* braces open a scope (a call sequence, inline asm's own registers):
     * a line inside one or holding one is left alone, since code put
     * before it could not name the scope's registers */
    int opens = 0, closes = 0;
    for (const char *c = q; c < eol && !(c[0] == '/' && c + 1 < eol && c[1] == '/'); c++)
      opens += *c == '{', closes += *c == '}';
    int braced = in_call > 0 || opens || closes;
    in_call += opens - closes;
    if (in_call < 0) in_call = 0;
    if (!strncmp(q, ".loc", 4)) { /* .loc FILE LINE COLUMN */
      char *e1 = NULL;
      file = (int)strtol(q + 4, &e1, 10);
      lineno = e1 ? (int)strtol(e1, NULL, 10) : 0;
    }
    int k = braced ? 0 : classify(line, eol);
    struct line_stmt st;
    if (parse_line(line, eol, &st) && !strncmp(st.op, "call", 4) && logged) logged->calls++;
    if (k == 3 && parse_line(line, eol, &st)) {
      log_fence(b, &st, nlog++);
      add_site(logged, &st, files, file, lineno);
    } else if (k && parse_line(line, eol, &st)) {
      site(b, k == 2);
      (*sites)++;
      int used = k == 1 ? log_site(b, &st, nlog) : 0;
      for (int i = 0; i < used; i++)
        add_site(logged, &st, files, file, lineno);
      nlog += used;
    }
    put(b, line, (size_t)(eol - line));
    if ((k == 2 || k == 3) && parse_line(line, eol, &st)) epoch_step(b, &st);
    line = eol;
  }
  return b->p;
}

static const char *target_problem(const char *ptx) {
  const char *t = strstr(ptx, ".target");
  if (!t) return "the PTX declares no .target";
  t += 7;
  while (*t == ' ' || *t == '\t')
    t++;
  if (strncmp(t, "sm_", 3)) return "the PTX .target is not an sm_ architecture";
  int sm = atoi(t + 3);
  return sm < 70 ? "the PTX targets an architecture before sm_70 (no nanosleep)" : NULL;
}

char *kc_ptx_perturbed_copy(const char *ptx, const char *name, int *sites,
                            struct kc_ptx_sites *logged, const char **why) {
  struct kc_ptx_span sp;
  *sites = 0;
  if (logged) memset(logged, 0, sizeof *logged);
  if (kc_ptx_find_entry(ptx, name, &sp)) {
    *why = "the kernel is not defined in the image's PTX";
    return NULL;
  }
  if ((*why = target_problem(ptx))) return NULL;
  if (strstr(ptx, KC_PTX_CFG)) {
    *why = "the module already declares kcheck's configuration";
    return NULL;
  }
  struct buf b = {0};
  /* The header up to and including .address_size (or .target), then the
   * configuration variable. */
  const char *hdr = strstr(ptx, ".address_size");
  if (!hdr) hdr = strstr(ptx, ".target");
  const char *hdr_end = strchr(hdr, '\n');
  hdr_end = hdr_end ? hdr_end + 1 : hdr + strlen(hdr);
  put(&b, ptx, (size_t)(hdr_end - ptx));
  puts_(&b, "\n.visible .global .align 4 .u32 " KC_PTX_CFG "[16];\n");
  /* The rest, without the other kernels (an entry calls no entry). */
  const char *at = hdr_end;
  for (;;) {
    struct kc_ptx_span other;
    const char *e = strstr(at, ".entry");
    if (!e) break;
    const char *q = e + 6;
    while (isspace((unsigned char)*q))
      q++;
    const char *ne = q;
    while (*ne && *ne != '(' && !isspace((unsigned char)*ne))
      ne++;
    char ename[1024];
    size_t nl = (size_t)(ne - q);
    if (nl == 0 || nl >= sizeof ename) {
      at = e + 6;
      continue;
    }
    memcpy(ename, q, nl);
    ename[nl] = 0;
    if (kc_ptx_find_entry(at, ename, &other)) { /* a declaration: keep it */
      at = e + 6;
      continue;
    }
    put(&b, at, other.start);
    if (!strcmp(ename, name)) {
      put(&b, at + other.start, other.body - other.start);
      put(&b, "\n", 1);
      struct files *files = calloc(1, sizeof *files);
      if (!files) {
        b.failed = 1;
        break;
      }
      read_files(ptx, files);
      instrument(at + other.body, at + other.end, &b, sites, logged, files);
      free(files);
    }
    at += other.end;
  }
  puts_(&b, at);
  if (b.failed) {
    kc_ptx_sites_free(logged);
    free(b.p);
    *why = "out of host memory";
    return NULL;
  }
  return b.p;
}
