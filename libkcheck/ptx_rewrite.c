/* libkcheck/ptx_rewrite.c — the perturbed copy of one kernel. Each warp
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
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}
static void puts_(struct buf *b, const char *s) { put(b, s, strlen(s)); }

/* Registers of the instrumentation (names no compiler emits). */
static const char prologue[] =
    "\t.reg .b32 %kcs, %kct, %kcu, %kcpm, %kcpb, %kcmk;\n"
    "\t.reg .pred %kcq;\n"
    "\tld.global.u32 %kcs, [" KC_PTX_CFG "];\n"
    "\tld.global.u32 %kcpm, [" KC_PTX_CFG "+4];\n"
    "\tld.global.u32 %kcpb, [" KC_PTX_CFG "+8];\n"
    "\tld.global.u32 %kcmk, [" KC_PTX_CFG "+12];\n"
    /* warp index within the block */
    "\tmov.u32 %kct, %tid.z;\n\tmov.u32 %kcu, %ntid.y;\n\tmul.lo.u32 %kct, %kct, %kcu;\n"
    "\tmov.u32 %kcu, %tid.y;\n\tadd.u32 %kct, %kct, %kcu;\n\tmov.u32 %kcu, %ntid.x;\n"
    "\tmul.lo.u32 %kct, %kct, %kcu;\n\tmov.u32 %kcu, %tid.x;\n\tadd.u32 %kct, %kct, %kcu;\n"
    "\tshr.u32 %kct, %kct, 5;\n"
    "\tmad.lo.u32 %kcs, %kct, 0x9E3779B1, %kcs;\n"
    /* block index within the grid */
    "\tmov.u32 %kct, %ctaid.z;\n\tmov.u32 %kcu, %nctaid.y;\n\tmul.lo.u32 %kct, %kct, %kcu;\n"
    "\tmov.u32 %kcu, %ctaid.y;\n\tadd.u32 %kct, %kct, %kcu;\n\tmov.u32 %kcu, %nctaid.x;\n"
    "\tmul.lo.u32 %kct, %kct, %kcu;\n\tmov.u32 %kcu, %ctaid.x;\n\tadd.u32 %kct, %kct, %kcu;\n"
    "\tmad.lo.u32 %kcs, %kct, 0x85EBCA77, %kcs;\n"
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
  int mem = !strncmp(o, "ld.", 3) || !strncmp(o, "ldu.", 4) || !strncmp(o, "st.", 3) ||
            !strncmp(o, "atom.", 5) || !strncmp(o, "red.", 4) || !strncmp(o, "ldmatrix", 8);
  if (!mem) return 0;
  /* kernel parameters, the thread's own stack and constants cannot race */
  if (strstr(o, ".param") || strstr(o, ".local") || strstr(o, ".const")) return 0;
  return 1;
}

/* The first statement line inside the body (after its declarations):
 * registers are declared before any code that uses them. */
static char *instrument(const char *body, const char *end, struct buf *b, int *sites) {
  int in_call = 0; /* inside a call sequence's braces: left alone */
  puts_(b, prologue);
  for (const char *line = body; line < end;) {
    const char *eol = memchr(line, '\n', (size_t)(end - line));
    eol = eol ? eol + 1 : end;
    const char *q = line;
    while (q < eol && isspace((unsigned char)*q))
      q++;
    if (q < eol && *q == '{') in_call++;
    if (q < eol && *q == '}' && in_call) in_call--;
    int k = in_call ? 0 : classify(line, eol);
    if (k) {
      site(b, k == 2);
      (*sites)++;
    }
    put(b, line, (size_t)(eol - line));
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

char *kc_ptx_perturbed_copy(const char *ptx, const char *name, int *sites, const char **why) {
  struct kc_ptx_span sp;
  *sites = 0;
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
  puts_(&b, "\n.visible .global .align 4 .u32 " KC_PTX_CFG "[8];\n");
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
      instrument(at + other.body, at + other.end, &b, sites);
    }
    at += other.end;
  }
  puts_(&b, at);
  if (b.failed) {
    free(b.p);
    *why = "out of host memory";
    return NULL;
  }
  return b.p;
}
