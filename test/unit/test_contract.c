/* test/unit/test_contract.c — contracts: the expression language (precedence,
 * functions, errors with positions), good files parsed into the expected
 * structures, each class of error with its line and column, binding to
 * parameter bytes, matching, and the annotation API. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../include/kcheck.h"
#include "check.h"
#include "contract.h"
#include "kernel.h"
#include "launch.h"
#include "ops.h"
#include "oracle.h"

static const char *const vars[] = {"M", "N", "K"};

static int lookup(void *ctx, const char *name, size_t len) {
  (void)ctx;
  for (int i = 0; i < 3; i++)
    if (strlen(vars[i]) == len && !strncmp(vars[i], name, len)) return i;
  return -1;
}

/* Value of text with M=6, N=4, K=-7; INT64_MIN on any error. */
static int64_t ev(const char *text, int allow_bool) {
  char err[256];
  int pos;
  struct kc_contract_expr *e =
      kc_contract_expr_compile(text, allow_bool, lookup, NULL, err, sizeof err, &pos);
  if (!e) return INT64_MIN;
  const int64_t v[] = {6, 4, -7};
  int64_t out = 0;
  int rc = kc_contract_expr_eval(e, v, &out, err, sizeof err);
  kc_contract_expr_free(e);
  return rc ? INT64_MIN : out;
}

/* The error position (0-based) of text, -1 when it compiles; msg gets why. */
static int err_at(const char *text, int allow_bool, char *msg, size_t n) {
  int pos = -1;
  struct kc_contract_expr *e =
      kc_contract_expr_compile(text, allow_bool, lookup, NULL, msg, n, &pos);
  if (e) {
    kc_contract_expr_free(e);
    return -1;
  }
  return pos;
}

static void test_expr(void) {
  CHECK(ev("1 + 2 * 3", 0) == 7);
  CHECK(ev("(1 + 2) * 3", 0) == 9);
  CHECK(ev("M - N - 1", 0) == 1); /* left associative */
  CHECK(ev("M / N * 2", 0) == 2);
  CHECK(ev("M % N + -K", 0) == 9);
  CHECK(ev("ceil_div(M, N)", 0) == 2 && ev("ceil_div(8, 4)", 0) == 2 &&
        ev("ceil_div(0, 4)", 0) == 0);
  CHECK(ev("min(M, N) * max(M, 2 + N)", 0) == 24);
  CHECK(ev("M > N && N > 0", 1) == 1);
  CHECK(ev("M == 6 || 1 / 0", 1) == 1); /* short-circuit */
  CHECK(ev("!(M % 2 == 0)", 1) == 0);
  CHECK(ev("1 + 2 < 4 && 2 * 3 >= 6", 1) == 1); /* arithmetic binds tighter */
  CHECK(ev("M <= 6 && M != 5 && K < 0", 1) == 1);
  CHECK(ev("0x10 + 1", 0) == 17);
  CHECK(ev("M / (N - 4)", 0) == INT64_MIN);             /* division by zero */
  CHECK(ev("9223372036854775807 + 1", 0) == INT64_MIN); /* overflow */
  char msg[256];
  CHECK(err_at("M +", 0, msg, sizeof msg) == 3 && strstr(msg, "expected a number"));
  CHECK(err_at("M + Q", 0, msg, sizeof msg) == 4 && strstr(msg, "unknown scalar 'Q'"));
  CHECK(err_at("foo(M, N)", 0, msg, sizeof msg) == 0 && strstr(msg, "unknown function 'foo'"));
  CHECK(err_at("min(M)", 0, msg, sizeof msg) == 5 && strstr(msg, "expected ','"));
  CHECK(err_at("(M + N", 0, msg, sizeof msg) == 6 && strstr(msg, "expected ')'"));
  CHECK(err_at("M N", 0, msg, sizeof msg) == 2 && strstr(msg, "unexpected 'N'"));
  CHECK(err_at("M == N", 0, msg, sizeof msg) == 2 && strstr(msg, "only allowed in domain"));
  CHECK(err_at("M == N", 1, msg, sizeof msg) == -1);
  CHECK(err_at("", 0, msg, sizeof msg) == 0 && strstr(msg, "empty"));
  CHECK(err_at("3x", 0, msg, sizeof msg) == 0 && strstr(msg, "bad number"));
}

static const char good[] =
    "contracts:\n"
    "  - kernel: {name: _Z6vecaddPKfPK13__nv_bfloat16Pfi}\n"
    "    params:\n"
    "      - name: a\n"
    "        tensor: {role: in, format: fp32, shape: [n]}\n"
    "      - name: b\n"
    "        tensor: {role: in, format: bf16, shape: [2, n], strides: [1, 2]}\n"
    "      - name: c\n"
    "        tensor: {role: out, format: fp32, shape: [n]}\n"
    "      - name: n\n"
    "        scalar: {type: i32}\n"
    "    op: add\n"
    "    profile: bf16_fp32acc\n"
    "    nondeterminism: allowed\n"
    "    domain: ['n % 8 == 0', 'n > 0']\n"
    "    launch: {grid: ['ceil_div(n, 256)'], block: [256], shmem: n * 4}\n"
    "    shapes: [{n: 8}, {n: 1024}]\n"
    "  - kernel: {glob: 'gemm<*>(Params)'}\n"
    "    params:\n"
    "      - name: p\n"
    "        fields:\n"
    "          - {name: M, offset: 0, scalar: i32}\n"
    "          - {name: A, offset: 8, tensor: {role: in, format: fp16, "
    "shape: [M, K]}}\n"
    "          - {name: K, offset: 4, scalar: {type: u32}}\n"
    "    op: sum\n"; /* one tensor: the struct's fields are the point here */

static void test_good(void) {
  struct kc_contract_set set = {0};
  CHECK(kc_contract_parse_text(good, strlen(good), "good.yaml", &set) == 0);
  kc_contract_print_diags(&set, "unexpected: ");
  CHECK(set.n == 2);
  if (set.n != 2) return;
  const struct kc_contract *c = set.c[0];
  CHECK(c->match == KC_CONTRACT_NAME && !strcmp(c->pattern, "_Z6vecaddPKfPK13__nv_bfloat16Pfi"));
  CHECK(!strcmp(c->where, "good.yaml:2") && c->line == 2);
  CHECK(c->nparams == 4 && c->nscalars == 1 && !strcmp(c->scalars[0]->name, "n"));
  CHECK(c->params[0].v.kind == KC_PK_TENSOR && c->params[0].v.tensor.role == KC_ROLE_IN);
  CHECK(c->params[1].v.tensor.format == kc_contract_format_parse("bf16") &&
        c->params[1].v.tensor.rank == 2 && c->params[1].v.tensor.strides[1]);
  CHECK(c->params[2].v.tensor.role == KC_ROLE_OUT && !c->params[2].v.tensor.strides[0]);
  CHECK(c->params[3].v.kind == KC_PK_SCALAR && c->params[3].v.scalar == KC_SC_I32);
  CHECK(!strcmp(c->op, "add") && c->nattrs == 0);
  CHECK(c->profile_spec && c->profile.acc == OC_FP32 && c->profile.in == OC_BF16);
  CHECK(c->nondeterminism_allowed && c->ndomain == 2 && c->has_launch && c->shmem);
  CHECK(c->nshapes == 2 && c->shapes[0] == 8 && c->shapes[1] == 1024);

  /* Binding to the bytes of vecadd(a, b, c, n=24) at the stand-in's offsets (b: bf16, as
   * the mangled name says; lint refuses a format narrower than it). */
  unsigned char buf[28] = {0};
  uint64_t pa = 0x7000, pb = 0x8000, pc = 0x9000;
  int32_t n = 24;
  memcpy(buf, &pa, 8), memcpy(buf + 8, &pb, 8), memcpy(buf + 16, &pc, 8), memcpy(buf + 24, &n, 4);
  const uint32_t off[] = {0, 8, 16, 24};
  struct kc_contract_binding b;
  char err[256] = "";
  CHECK(kc_contract_bind(c, buf, sizeof buf, off, 4, &b, err, sizeof err) == 0);
  CHECK(b.ivals[0] == 24 && b.ntensors == 3 && b.tensors[2].ptr == 0x9000);
  CHECK(b.tensors[1].shape[0] == 2 && b.tensors[1].shape[1] == 24 && b.tensors[1].strides[0] == 1 &&
        b.tensors[1].strides[1] == 2);
  CHECK(b.tensors[0].strides[0] == 1);
  CHECK(kc_contract_check_domain(c, &b, err, sizeof err) == -1);
  /* Natural alignment when the kernel's layout is unknown gives the same. */
  struct kc_contract_binding b2;
  CHECK(kc_contract_bind(c, buf, sizeof buf, NULL, 0, &b2, err, sizeof err) == 0 &&
        b2.ivals[0] == 24);
  unsigned grid[3], block[3], shmem;
  CHECK(kc_contract_launch_dims(c, &b, grid, block, &shmem, err, sizeof err) == 0);
  CHECK(grid[0] == 1 && grid[1] == 1 && block[0] == 256 && shmem == 96);
  n = 12; /* 12 % 8 != 0 */
  memcpy(buf + 24, &n, 4);
  CHECK(kc_contract_bind(c, buf, sizeof buf, off, 4, &b, err, sizeof err) == 0);
  CHECK(kc_contract_check_domain(c, &b, err, sizeof err) == 0 && strstr(err, "n % 8 == 0"));
  CHECK(kc_contract_bind(c, buf, 20, off, 4, &b, err, sizeof err) == -1 && strstr(err, "past"));
  CHECK(kc_contract_bind(c, buf, sizeof buf, off, 3, &b, err, sizeof err) == -1);

  /* Writing scalars back: n = 40 at the kernel's offset, pointers untouched;
   * binding the result reads 40 back. A value the type cannot hold fails. */
  int64_t want[1] = {40};
  CHECK(kc_contract_write_scalars(c, buf, sizeof buf, off, 4, want, err, sizeof err) == 0);
  CHECK(kc_contract_bind(c, buf, sizeof buf, off, 4, &b, err, sizeof err) == 0 &&
        b.ivals[0] == 40 && b.tensors[0].ptr == 0x7000 && b.tensors[2].shape[0] == 40);
  want[0] = (int64_t)1 << 40;
  CHECK(kc_contract_write_scalars(c, buf, sizeof buf, off, 4, want, err, sizeof err) == -1 &&
        strstr(err, "does not fit"));
  CHECK(kc_contract_write_scalars(c, buf, 20, off, 4, want, err, sizeof err) == -1);

  /* The struct contract: scalars and a pointer inside one parameter. */
  const struct kc_contract *g = set.c[1];
  CHECK(g->match == KC_CONTRACT_GLOB && g->nparams == 1 && g->params[0].v.kind == KC_PK_STRUCT);
  CHECK(g->params[0].nfields == 3 && g->nscalars == 2 && g->params[0].fields[1].offset == 8);
  unsigned char sb[16] = {0};
  int32_t m = 3;
  uint32_t k = 5;
  uint64_t pA = 0xa000;
  memcpy(sb, &m, 4), memcpy(sb + 4, &k, 4), memcpy(sb + 8, &pA, 8);
  const uint32_t soff[] = {0};
  CHECK(kc_contract_bind(g, sb, sizeof sb, soff, 1, &b, err, sizeof err) == 0);
  CHECK(b.ntensors == 1 && b.tensors[0].ptr == 0xa000 && b.tensors[0].shape[0] == 3 &&
        b.tensors[0].shape[1] == 5 && b.tensors[0].strides[0] == 5);
  /* Scalars inside a struct parameter are written at their field offsets. */
  int64_t sw[2] = {7, 9};
  CHECK(kc_contract_write_scalars(g, sb, sizeof sb, soff, 1, sw, err, sizeof err) == 0);
  CHECK(kc_contract_bind(g, sb, sizeof sb, soff, 1, &b, err, sizeof err) == 0 &&
        b.tensors[0].shape[0] == 7 && b.tensors[0].shape[1] == 9 && b.tensors[0].ptr == 0xa000);
  sw[1] = -1; /* the second field is u32 */
  CHECK(kc_contract_write_scalars(g, sb, sizeof sb, soff, 1, sw, err, sizeof err) == -1);

  /* Matching. */
  CHECK(kc_contract_matches(c, "_Z6vecaddPKfPK13__nv_bfloat16Pfi",
                            "vecadd(float const*, __nv_bfloat16 const*, float*, int)"));
  CHECK(!kc_contract_matches(c, "_Z6vecsubPKfS0_Pfi",
                             "vecsub(float const*, float const*, float*, int)"));
  CHECK(kc_contract_matches(g, "x", "gemm<128, 64>(Params)") &&
        !kc_contract_matches(g, "x", "gemm(Params)"));
  kc_contract_set_free(&set);
}

/* Parses text and checks that diagnostic i is at line:col and mentions want. */
struct want {
  int line, col;
  const char *msg;
};

static void expect_errors(const char *text, const struct want *w, int n) {
  struct kc_contract_set set = {0};
  int errors = kc_contract_parse_text(text, strlen(text), "bad.yaml", &set);
  CHECK(errors == n && set.ndiags == n && set.n == 0);
  for (int i = 0; i < n && i < set.ndiags; i++) {
    const struct kc_contract_diag *d = &set.diags[i];
    int ok = d->line == w[i].line && d->col == w[i].col && strstr(d->msg, w[i].msg);
    if (!ok)
      fprintf(stderr, "  got %d:%d %s; wanted %d:%d ...%s...\n", d->line, d->col, d->msg, w[i].line,
              w[i].col, w[i].msg);
    CHECK(ok);
  }
  kc_contract_set_free(&set);
}

static void test_errors(void) {
  const char base[] = "contracts:\n"
                      "  - kernel: {regex: 'a(b'}\n"                          /* 2 */
                      "    params:\n"                                         /* 3 */
                      "      - name: x\n"                                     /* 4 */
                      "        tensor: {rol: in, format: fp32, shape: [n]}\n" /* 5 */
                      "      - name: x\n"                                     /* 6 */
                      "        scalar: {type: i128}\n"                        /* 7 */
                      "      - name: y\n"                                     /* 8 */
                      "        tensor: {role: sideways, format: bf17, shape: [n * (2 + q)]}\n"
                      "      - name: z\n"                       /* 10 */
                      "    op: matmul\n"                        /* 11 */
                      "    attrs: {axes: 1, eps: tiny}\n"       /* 12 */
                      "    profile: bf16_fp99\n"                /* 13 */
                      "    nondeterminism: sometimes\n"         /* 14 */
                      "    domain: [\"n % 8 == 0\", \"x >\"]\n" /* 15 */
                      "    launch: {grid: [n], blok: [1]}\n";   /* 16 */
  const struct want w[] = {
      {2, 21, "bad regex 'a(b'"},
      {5, 17, "tensor 'x' has no role"},
      {5, 18, "unknown key 'rol' in tensor 'x' (did you mean 'role'?"},
      {5, 49,
       "shape expression 'n': unknown scalar 'n' (scalars: x; launch: gridDim.x/y/z, "
       "blockDim.x/y/z) at column 1"},
      {6, 15, "duplicate parameter name 'x' (first at line 4)"},
      {7, 24, "unknown scalar type 'i128'"},
      {9, 24, "bad role 'sideways'"},
      {9, 42, "unknown format 'bf17'"},
      {9, 56, "unknown scalar 'n'"},
      {10, 9, "parameter 'z' needs exactly one of tensor, scalar, fields, opaque (found 0)"},
      {12, 13, "unknown attr 'axes' (did you mean 'axis'?"},
      {12, 27, "bad value 'tiny' for attr 'eps' (expected a number)"},
      {13, 14, "bad profile 'bf16_fp99': unknown preset 'bf16_fp99'"},
      {14, 21, "bad nondeterminism 'sometimes'"},
      {15, 15, "domain constraint 'n % 8 == 0': unknown scalar 'n'"},
      {15, 32,
       "domain constraint 'x >': expected a number, a scalar name or '(', found end of "
       "expression at column 4 of the expression"},
      {16, 13, "launch has no block"},
      {16, 21, "grid expression 'n': unknown scalar 'n'"},
      {16, 25, "unknown key 'blok' in launch (did you mean 'block'?"},
  };
  expect_errors(base, w, (int)(sizeof w / sizeof w[0]));

  const struct want w2[] = {{1, 1, "no 'contracts' key"}, {1, 1, "unknown key 'contract'"}};
  expect_errors("contract: []\n", w2, 2);
  const struct want w3[] = {{2, 5, "contract has no kernel"},
                            {2, 5, "contract has no op"},
                            {2, 5, "contract has no params"}};
  expect_errors("contracts:\n  - {attrs: {}}\n", w3, 3);
  const struct want w4[] = {{3, 1, "YAML syntax: did not find expected node content"}};
  expect_errors("contracts:\n  - [\n", w4, 1);
  const struct want w5[] = {{3, 13, "kernel needs exactly one of name, glob, regex (found 2)"},
                            {5, 9, "unknown op 'softmaxx' (did you mean 'softmax'?"}};
  expect_errors("contracts:\n  - params: []\n    kernel: {name: a, glob: b}\n\n    op: softmaxx\n",
                w5, 2);
  /* Several contracts: the good one survives, the bad one is reported. */
  struct kc_contract_set set = {0};
  const char two[] = "contracts:\n  - {kernel: {name: k1}, op: exp, params: [{name: x, tensor: "
                     "{role: inout, format: fp32, shape: [4]}}]}\n"
                     "  - {kernel: {name: k2}, params: [], op: expp}\n";
  CHECK(kc_contract_parse_text(two, strlen(two), "two.yaml", &set) == 1 && set.n == 1);
  kc_contract_set_free(&set);
}

/* Extents from the launch (gridDim/blockDim in shapes), the application's
 * launch checked against the contract, and each op's arity at lint time. */
static void test_launch_and_arity(void) {
  const char rows[] = "contracts:\n"
                      "  - kernel: {name: rowmax}\n"
                      "    params:\n"
                      "      - {name: x, tensor: {role: in, format: fp32, shape: [gridDim.x, n]}}\n"
                      "      - {name: y, tensor: {role: out, format: fp32, shape: [gridDim.x]}}\n"
                      "      - {name: n, scalar: i32}\n"
                      "    op: max\n"
                      "    attrs: {axis: 1}\n"
                      "    domain: [\"n >= 1\", \"blockDim.x == 128\"]\n";
  struct kc_contract_set set = {0};
  CHECK(kc_contract_parse_text(rows, strlen(rows), "rows.yaml", &set) == 0 && set.n == 1);
  kc_contract_print_diags(&set, "unexpected: ");
  if (set.n != 1) return;
  const struct kc_contract *c = set.c[0];
  CHECK(c->uses_launch_dims == 1);
  unsigned char buf[20] = {0};
  uint64_t px = 0x1000, py = 0x2000;
  int32_t n = 64;
  memcpy(buf, &px, 8), memcpy(buf + 8, &py, 8), memcpy(buf + 16, &n, 4);
  uint32_t off[] = {0, 8, 16};
  struct kc_contract_binding b;
  char err[512] = "";
  CHECK(kc_contract_bind(c, buf, sizeof buf, off, 3, &b, err, sizeof err) == -1 &&
        strstr(err, "launch dimensions are unknown"));
  unsigned grid[3] = {7, 1, 1}, block[3] = {128, 1, 1};
  CHECK(kc_contract_bind_dims(c, buf, sizeof buf, off, 3, grid, block, &b, err, sizeof err) == 0 &&
        b.tensors[0].shape[0] == 7 && b.tensors[0].shape[1] == 64 && b.tensors[1].shape[0] == 7);
  CHECK(kc_contract_check_domain(c, &b, err, sizeof err) == -1);
  /* the application's launch: applies at block 128, not at 256 */
  struct kc_kernel k;
  memset(&k, 0, sizeof k);
  k.nparams = 3;
  k.param_offset = off;
  struct kc_launch_info li;
  memset(&li, 0, sizeof li);
  li.k = &k;
  li.param_buf = buf;
  li.param_size = sizeof buf;
  li.grid[0] = 7, li.grid[1] = li.grid[2] = 1;
  li.block[0] = 128, li.block[1] = li.block[2] = 1;
  CHECK(kc_contract_applies(c, &li, err, sizeof err) == 1);
  li.block[0] = 256;
  CHECK(kc_contract_applies(c, &li, err, sizeof err) == 0 && strstr(err, "outside its domain") &&
        strstr(err, "blockDim.x == 128"));
  kc_contract_set_free(&set);

  /* A launch section: the launch must be the one it computes. */
  const char vec[] = "contracts:\n"
                     "  - kernel: {name: vecadd}\n"
                     "    params:\n"
                     "      - {name: a, tensor: {role: in, format: fp32, shape: [n]}}\n"
                     "      - {name: c, tensor: {role: out, format: fp32, shape: [n]}}\n"
                     "      - {name: n, scalar: i32}\n"
                     "    op: exp\n"
                     "    domain: [\"n % 4 == 0\"]\n"
                     "    launch: {grid: [\"ceil_div(n, 128)\"], block: [128]}\n";
  memset(&set, 0, sizeof set);
  CHECK(kc_contract_parse_text(vec, strlen(vec), "vec.yaml", &set) == 0 && set.n == 1);
  if (set.n != 1) return;
  c = set.c[0];
  n = 1000;
  memcpy(buf + 16, &n, 4);
  li.grid[0] = 8, li.block[0] = 128;
  CHECK(kc_contract_applies(c, &li, err, sizeof err) == 1);
  li.grid[0] = 16, li.block[0] = 64;
  CHECK(kc_contract_applies(c, &li, err, sizeof err) == 0 &&
        strstr(err, "the launch is grid (16,1,1) block (64,1,1)") &&
        strstr(err, "says grid (8,1,1) block (128,1,1)"));
  n = 1001;
  memcpy(buf + 16, &n, 4);
  li.grid[0] = 8, li.block[0] = 128;
  CHECK(kc_contract_applies(c, &li, err, sizeof err) == 0 && strstr(err, "n % 4 == 0"));
  kc_contract_set_free(&set);

  /* The launch section cannot use the launch's own dimensions. */
  const struct want w1[] = {
      {7, 21, "grid expression 'gridDim.x': the launch section computes the launch dimensions"}};
  expect_errors("contracts:\n  - kernel: {name: k}\n    op: exp\n    params:\n"
                "      - {name: x, tensor: {role: inout, format: fp32, shape: [gridDim.x]}}\n"
                "\n    launch: {grid: [gridDim.x], block: [1]}\n",
                w1, 1);

  /* Arity: mul with one tensor needs a constant or a float scalar. */
#define K2(op, params, attrs)                                                                      \
  "contracts:\n  - kernel: {name: k}\n    op: " op "\n    params:\n" params attrs
#define X_IN "      - {name: x, tensor: {role: in, format: fp32, shape: [4]}}\n"
#define Y_IN "      - {name: y, tensor: {role: in, format: fp32, shape: [4]}}\n"
#define O_OUT "      - {name: o, tensor: {role: out, format: fp32, shape: [4]}}\n"
  const struct want w2[] = {{3, 9,
                             "op 'mul' takes 2 operands: the contract declares one input "
                             "tensor and no float scalar or constant"}};
  expect_errors(K2("mul", X_IN O_OUT, ""), w2, 1);
  const char *fine[] = {
      K2("mul", X_IN O_OUT, "    attrs: {rhs: 2}\n"),
      K2("add", X_IN O_OUT, "    attrs: {rhs: 1}\n"),
      K2("sub", X_IN O_OUT, "    attrs: {lhs: 1}\n"),
      K2("mul", X_IN Y_IN O_OUT, ""),
      K2("mul", X_IN "      - {name: s, scalar: f32}\n" O_OUT, ""),
      K2("clamp", X_IN O_OUT, "    attrs: {min: -1, max: 1}\n"),
      K2("relu_fmax", X_IN O_OUT, ""),
      K2("exp", "      - {name: x, tensor: {role: inout, format: fp32, shape: [4]}}\n", ""),
  };
  for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
    memset(&set, 0, sizeof set);
    int e = kc_contract_parse_text(fine[i], strlen(fine[i]), "fine.yaml", &set);
    CHECK(e == 0 && set.n == 1);
    if (e) kc_contract_print_diags(&set, "unexpected: ");
    kc_contract_set_free(&set);
  }
  const struct want w3[] = {{3, 9, "give one constant operand, lhs or rhs, not both"}};
  expect_errors(K2("mul", X_IN O_OUT, "    attrs: {lhs: 1, rhs: 2}\n"), w3, 1);
  const struct want w4[] = {{3, 9, "op 'exp' takes no constant operand"}};
  expect_errors(K2("exp", X_IN O_OUT, "    attrs: {rhs: 2}\n"), w4, 1);
  const struct want w5[] = {{3, 9, "declares two input tensors and a constant"}};
  expect_errors(K2("add", X_IN Y_IN O_OUT, "    attrs: {rhs: 2}\n"), w5, 1);
  const struct want w6[] = {{3, 9, "attrs min/max are clamp's bounds"}};
  expect_errors(K2("add", X_IN Y_IN O_OUT, "    attrs: {min: 2}\n"), w6, 1);
  const struct want w7[] = {{3, 9,
                             "op 'matmul' takes at least 2 input tensors; the contract "
                             "declares 1"}};
  expect_errors(K2("matmul", X_IN O_OUT, ""), w7, 1);
  const struct want w8[] = {{3, 9, "op 'exp' takes 1 input tensor; the contract declares 2"}};
  expect_errors(K2("exp", X_IN Y_IN O_OUT, ""), w8, 1);
#undef K2
#undef X_IN
#undef Y_IN
#undef O_OUT
}

/* Typed attrs (contract/attrs.def): every attr parsed from the YAML into
 * its type, a wrong type and an op of another class lint errors with the
 * attr's line, and the same parser over the "k=v" text of the torch
 * binding (booleans as true/false, True, 1/0: `causal: true` is causal). */
static const char *op_of_class(int cls, int want) {
  for (int i = 0; i < OC_ID_COUNT; i++) {
    const struct oc_op_info *op = oc_op_by_id((enum oc_opid)i);
    int in = (int)op->cls == cls;
    if (in == want) return op->name;
  }
  return NULL;
}

static void test_attrs(void) {
  for (int id = 0; id < KC_ATTR_COUNT; id++) {
    const struct kc_attr_def *d = kc_attr_def((enum kc_attr_id)id);
    int cls = 0;
    while (!(d->classes >> cls & 1u))
      cls++;
    const char *op = op_of_class(cls, 1), *other = NULL;
    for (int k = 0; k < 7 && !other; k++)
      if (!(d->classes >> k & 1u)) other = op_of_class(k, 1);
    static const char *const good_v[] = {"true", "-1", "0.5", "gelu_tanh", "bf16", NULL, "2"};
    static const char *const bad[] = {"yes", "1.5", "tiny", "swish2", "bf17", "sometimes", "1.5"};
    char enum0[32] = "";
    if (d->type == KC_AT_ENUM)
      snprintf(enum0, sizeof enum0, "%.*s", (int)strcspn(d->values, " "), d->values);
    const char *gv = d->type == KC_AT_ENUM ? enum0 : good_v[d->type];
    char text[512];
    /* six operands: enough for every op's arity */
    const char *args = "{q: a, k: b, v: c, g: d, beta: e, x: f}";
    snprintf(text, sizeof text,
             "contracts:\n  - {torch_op: 't::o', op: %s, profile: fp32, args: %s,\n"
             "     attrs: {%s: %s}}\n",
             op, (cls == OC_CLASS_ELEMENTWISE ? "{x: a}" : args), d->name, gv);
    struct kc_contract_set set = {0};
    int errors = kc_contract_parse_text(text, strlen(text), "attrs.yaml", &set);
    if (errors) fprintf(stderr, "  %s: %s\n", d->name, set.ndiags ? set.diags[0].msg : "?");
    CHECK(errors == 0 && set.n == 1);
    if (set.n == 1) {
      const struct kc_attr_val *v = &set.c[0]->attr.v[id];
      CHECK(v->set);
      switch (d->type) {
      case KC_AT_BOOL: CHECK(v->b == 1); break;
      case KC_AT_INT: CHECK(v->i == -1 && v->f == -1); break;
      case KC_AT_FLOAT: CHECK(v->f == 0.5); break;
      case KC_AT_ACT: CHECK(v->e == OC_ACT_GELU_TANH); break;
      case KC_AT_FORMAT: CHECK(v->e == OC_BF16); break;
      case KC_AT_ENUM: CHECK(v->e == 0); break;
      case KC_AT_INTS: CHECK(v->ni == 1 && v->iv[0] == 2 && v->i == 2); break;
      }
    }
    kc_contract_set_free(&set);
    /* the wrong type: an error at the value's line */
    snprintf(text, sizeof text,
             "contracts:\n  - {torch_op: 't::o', op: %s, profile: fp32, args: %s,\n"
             "     attrs: {%s: %s}}\n",
             op, (cls == OC_CLASS_ELEMENTWISE ? "{x: a}" : args), d->name, bad[d->type]);
    errors = kc_contract_parse_text(text, strlen(text), "attrs.yaml", &set);
    CHECK(errors == 1 && set.ndiags == 1 && set.diags[0].line == 3 &&
          strstr(set.diags[0].msg, "bad value") && strstr(set.diags[0].msg, d->name));
    kc_contract_set_free(&set);
    /* an op of a class the attr does not apply to */
    if (other) {
      snprintf(text, sizeof text,
               "contracts:\n  - {torch_op: 't::o', op: %s, profile: fp32, args: %s,\n"
               "     attrs: {%s: %s}}\n",
               other, (oc_op_find(other)->cls == OC_CLASS_ELEMENTWISE ? "{x: a}" : args), d->name,
               gv);
      errors = kc_contract_parse_text(text, strlen(text), "attrs.yaml", &set);
      CHECK(errors >= 1 && set.ndiags >= 1 && set.diags[0].line == 3 &&
            strstr(set.diags[0].msg, "does not apply"));
      kc_contract_set_free(&set);
    }
    /* the binding's text, parsed by the same rules */
    struct kc_attrs a;
    char kv[128], err[256];
    snprintf(kv, sizeof kv, "screen=4 %s=%s fraction=0.5", d->name, gv);
    CHECK(kc_attrs_parse_kv(kv, &a, err, sizeof err) == 0 && a.v[id].set);
    snprintf(kv, sizeof kv, "%s=%s", d->name, bad[d->type]);
    CHECK(kc_attrs_parse_kv(kv, &a, err, sizeof err) == -1 && strstr(err, d->name));
  }
  /* Booleans: every spelling; absent: the default. The regression: the
   * text "true" reached strtod and read as 0 (non-causal). */
  struct kc_attrs a;
  char err[256];
  CHECK(kc_attrs_parse_kv("causal=true transpose_a=True transpose_b=1 gate_is_log=false", &a, err,
                          sizeof err) == 0);
  CHECK(kc_attr_bool(&a, KC_ATTR_CAUSAL, 0) == 1 && kc_attr_bool(&a, KC_ATTR_TRANSPOSE_A, 0) == 1 &&
        kc_attr_bool(&a, KC_ATTR_TRANSPOSE_B, 0) == 1 &&
        kc_attr_bool(&a, KC_ATTR_GATE_IS_LOG, 1) == 0);
  CHECK(kc_attrs_parse_kv("causal=0", &a, err, sizeof err) == 0 &&
        kc_attr_bool(&a, KC_ATTR_CAUSAL, 1) == 0 && kc_attr_num(&a, KC_ATTR_EPS, 1e-5) == 1e-5);
  CHECK(kc_attrs_parse_kv("masked=multiply", &a, err, sizeof err) == 0 &&
        kc_attr_enum(&a, KC_ATTR_MASKED, -1) == 1);
  /* Lists (a convolution's stride per dim): one number for every dim. */
  int ok;
  CHECK(kc_attrs_parse_kv("stride=2,1 padding=3", &a, err, sizeof err) == 0 &&
        kc_attr_ints(&a, KC_ATTR_STRIDE, 1, 0, &ok) == 1 && ok &&
        kc_attr_ints(&a, KC_ATTR_PADDING, 2, 0, &ok) == 3 && ok &&
        kc_attr_ints(&a, KC_ATTR_DILATION, 0, 1, &ok) == 1 && ok);
  kc_attr_ints(&a, KC_ATTR_STRIDE, 2, 0, &ok);
  CHECK(!ok);
  CHECK(kc_attrs_parse_kv("stride=2,,1", &a, err, sizeof err) == -1 &&
        kc_attrs_parse_kv("stride=1,2,3,4", &a, err, sizeof err) == -1);
  /* A kernel contract: causal: true reaches the judge as true. */
  const char k[] = "contracts:\n"
                   "  - kernel: {name: attn}\n"
                   "    params:\n"
                   "      - {name: q, tensor: {role: in, format: fp32, shape: [4, 8]}}\n"
                   "      - {name: k, tensor: {role: in, format: fp32, shape: [4, 8]}}\n"
                   "      - {name: v, tensor: {role: in, format: fp32, shape: [4, 8]}}\n"
                   "      - {name: o, tensor: {role: out, format: fp32, shape: [4, 8]}}\n"
                   "    op: attention\n"
                   "    attrs: {causal: true, masked: skip, scale: 0.25}\n"
                   "    profile: fp32\n";
  struct kc_contract_set set = {0};
  CHECK(kc_contract_parse_text(k, strlen(k), "k.yaml", &set) == 0 && set.n == 1);
  if (set.n == 1) {
    CHECK(kc_attr_bool(&set.c[0]->attr, KC_ATTR_CAUSAL, 0) == 1);
    CHECK(kc_attr_enum(&set.c[0]->attr, KC_ATTR_MASKED, -1) == 0);
    CHECK(kc_attr_num(&set.c[0]->attr, KC_ATTR_SCALE, 1) == 0.25);
  }
  kc_contract_set_free(&set);
  const struct want w[] = {{9, 13, "attr 'causal' does not apply to op 'matmul'"},
                           {9, 27, "attr 'masked' does not apply to op 'matmul'"},
                           {9, 41, "attr 'scale' does not apply to op 'matmul'"}};
  char m[sizeof k + 16];
  snprintf(m, sizeof m, "%s", k);
  char *at = strstr(m, "op: attention");
  memcpy(at, "op: matmul   ", 13);
  expect_errors(m, w, 3);
}

/* A torch_op contract's own shapes: inputs of its args, positive dims. */
static void test_torch_shapes(void) {
  const char ok[] = "contracts:\n"
                    "  - {torch_op: 'm::rowsum', op: sum, profile: fp32, args: {x: x},\n"
                    "     shapes: [{x: [3, 5]}, {x: [1, 4097]}]}\n";
  struct kc_contract_set set = {0};
  CHECK(kc_contract_parse_text(ok, strlen(ok), "s.yaml", &set) == 0 && set.n == 1);
  if (set.n == 1) {
    json_t *sh = set.c[0]->torch_shapes;
    CHECK(sh && json_array_size(sh) == 2);
    json_t *d = json_object_get(json_array_get(sh, 1), "x");
    CHECK(json_array_size(d) == 2 && json_integer_value(json_array_get(d, 1)) == 4097);
  }
  kc_contract_set_free(&set);
  const struct want w[] = {{3, 16, "shapes entry names 'y', which is not an input in args"},
                           {3, 36, "bad dimension '0' in shapes"}};
  expect_errors("contracts:\n"
                "  - {torch_op: 'm::rowsum', op: sum, profile: fp32, args: {x: x},\n"
                "     shapes: [{y: [3, 5]}, {x: [1, 0]}]}\n",
                w, 2);
}

/* A torch_op contract's args entry naming its argument through a view
 * chain: kept as JSON for the binding; an unknown view op, a wrong arity,
 * a non-integer argument, a bad size, a chain on out rejected. */
static void test_torch_views(void) {
  const char ok[] = "contracts:\n"
                    "  - {torch_op: 'm::sm', op: softmax, profile: fp32, attrs: {axis: -1},\n"
                    "     args: {x: {arg: in0, view: [[transpose, 1, 2], [contiguous],\n"
                    "                                  [view, -1, 64], [squeeze], [t]]}}}\n";
  struct kc_contract_set set = {0};
  CHECK(kc_contract_parse_text(ok, strlen(ok), "v.yaml", &set) == 0 && set.n == 1);
  if (set.n == 1) {
    const struct kc_contract *c = set.c[0];
    CHECK(c->ntorch_args == 1 && !strcmp(c->torch_args[0].value, "in0"));
    json_t *ch = json_object_get(c->torch_views, "x");
    CHECK(json_array_size(ch) == 5);
    json_t *v = json_array_get(ch, 2);
    CHECK(!strcmp(json_string_value(json_array_get(v, 0)), "view") &&
          json_integer_value(json_array_get(v, 1)) == -1 &&
          json_integer_value(json_array_get(v, 2)) == 64);
  }
  kc_contract_set_free(&set);
  const struct want w[] = {
      {3, 35, "unknown view op 'flip'"},
      {4, 34, "view op 'transpose' takes 2 integers; the step gives 1"},
      {5, 47, "view op 'view': argument 2 is not an integer"},
      {6, 48, "view op 'reshape': only one size may be -1"},
      {8, 47, "view op 'permute' names dim 1 twice"},
      {8, 56, "args entry 'b': expected {arg: NAME, view: [[op, int...], ...]}"},
      {9, 34, "view step: expected [op, int...]"},
      {10, 18, "args entry 'out' names the result; it takes no view chain"}};
  expect_errors("contracts:\n"
                "  - {torch_op: 'm::a', op: matmul, profile: fp32,\n"
                "     args: {a: {arg: in0, view: [[flip, 0]]},\n"
                "            b: {arg: in1, view: [[transpose, 1]]},\n"
                "            bias: {arg: in2, view: [[view, 4, x]]},\n"
                "            c: {arg: in3, view: [[reshape, -1, -1]]}}}\n"
                "  - {torch_op: 'm::b', op: matmul, profile: fp32,\n"
                "     args: {a: {arg: in0, view: [[permute, 1, 1]]}, b: {arg: in1},\n"
                "            c: {arg: in2, view: [transpose]},\n"
                "            out: {arg: in3, view: [[t]]}}}\n",
                w, 8);
}

static void test_api(void) {
  CHECK(kcheck_api_version() == 4);
  int before = kc_contracts_count();
  CHECK(kcheck_contract_register_yaml(
            "contracts:\n  - {kernel: {regex: '^vec'}, op: exp, params: [{name: x, tensor: "
            "{role: inout, format: fp32, shape: [4]}}]}\n",
            "api") == 1);
  CHECK(kcheck_contract_register_yaml("contracts: [{op: nope}]\n", "api-bad") == -1);
  CHECK(kc_contracts_count() == before + 1);
  struct kc_kernel k = {.name = "_Z6vecaddPKfPK13__nv_bfloat16Pfi",
                        .demangled = "vecadd(float const*, __nv_bfloat16 const*, float*, int)"};
  const struct kc_contract *c = kc_contract_match(&k);
  CHECK(c && !strcmp(c->where, "api:2"));
  CHECK(kc_contract_match(&k) == c); /* cached */
  struct kc_kernel other = {.name = "_Z3foov", .demangled = "foo()"};
  CHECK(kc_contract_match(&other) == NULL);

  /* a profile spec checked as a contract's is, the reason written */
  char err[512] = "";
  CHECK(kcheck_profile_check("tensorcore_tf32:ftz=1", err, sizeof err) == 0 && !err[0]);
  CHECK(kcheck_profile_check("tf16", err, sizeof err) == -1);
  CHECK(strstr(err, "unknown preset 'tf16'") && strstr(err, "tensorcore_tf32"));
  CHECK(kcheck_profile_check("fp32:math=nope", err, sizeof err) == -1 && strstr(err, "math"));
  CHECK(kcheck_profile_check("fp32", NULL, 0) == 0);

  CHECK(kc_contract_annotation_current() == NULL);
  CHECK(kcheck_annotate_tensor("in", NULL, "fp32", 0, NULL, NULL) == -1); /* no begin */
  CHECK(kcheck_annotate_begin("softmaks", NULL) == -1);
  CHECK(kcheck_annotate_begin("softmax", "fp32:math=nope") == -1);
  CHECK(kcheck_annotate_begin("softmax", "fp32:softmax=online") == 0);
  long shape[] = {4, 8};
  CHECK(kcheck_annotate_tensor("in", (void *)0x1000, "fp32", 2, shape, NULL) == 0);
  CHECK(kcheck_annotate_tensor("sideways", (void *)0x2000, "fp32", 2, shape, NULL) == -1);
  CHECK(kcheck_annotate_tensor("out", (void *)0x2000, "fp33", 2, shape, NULL) == -1);
  CHECK(kc_contract_annotation_current() == NULL); /* not in force before end */
  CHECK(kcheck_annotate_tensor("out", (void *)0x2000, "bf16", 2, shape, NULL) == 0);
  CHECK(kcheck_annotate_end() == 0);
  const struct kc_contract_annotation *a = kc_contract_annotation_current();
  CHECK(a && !strcmp(a->op, "softmax") && a->ntensors == 2 && a->has_profile &&
        a->profile.softmax == OC_SOFTMAX_ONLINE);
  CHECK(a && a->t[1].role == KC_ROLE_OUT && a->t[1].strides[0] == 8 && a->t[1].strides[1] == 1);
  char desc[256];
  CHECK(kcheck_annotation_describe(desc, sizeof desc) > 0 && strstr(desc, "softmax") &&
        strstr(desc, "out:bf16"));

  /* A contract from the annotation for a launch whose parameters are a
   * struct {int n; float *out; float *in;} (offset 0) and a plain pointer
   * (offset 24) holding nothing annotated: the tensors become fields of
   * parameter 0 at their offsets, declared in annotation order. */
  uint32_t offs[] = {0, 24};
  struct kc_kernel kk = {.name = "_Z1kv", .demangled = "k()", .nparams = 2, .param_offset = offs};
  unsigned char pb[32] = {0};
  uint64_t in = 0x1000, out = 0x2000, stray = 0x3000;
  memcpy(pb + 8, &out, 8), memcpy(pb + 16, &in, 8), memcpy(pb + 24, &stray, 8);
  char why[128] = "";
  struct kc_contract *ac = kc_contract_from_annotation(a, &kk, pb, sizeof pb, why, sizeof why);
  CHECK(ac && !strcmp(ac->op, "softmax") && ac->profile_spec && ac->nparams == 2);
  if (ac) {
    CHECK(ac->params[0].v.kind == KC_PK_STRUCT && ac->params[0].nfields == 2 &&
          ac->params[1].v.kind == KC_PK_OPAQUE);
    const struct kc_contract_value *f0 = &ac->params[0].fields[0], *f1 = &ac->params[0].fields[1];
    CHECK(f0->offset == 8 && !strcmp(f0->name, "out1") && f0->line == 2);
    CHECK(f1->offset == 16 && !strcmp(f1->name, "in0") && f1->line == 1);
    struct kc_contract_binding ab;
    char e[128];
    CHECK(kc_contract_bind(ac, pb, sizeof pb, offs, 2, &ab, e, sizeof e) == 0 && ab.ntensors == 2 &&
          ab.tensors[0].ptr == 0x2000 && ab.tensors[1].shape[1] == 8 &&
          ab.tensors[0].v->tensor.format == kc_contract_format_parse("bf16"));
    kc_contract_free(ac);
  }
  /* A second copy of the input pointer (offset 24) is relocated with it. */
  memcpy(pb + 24, &in, 8);
  ac = kc_contract_from_annotation(a, &kk, pb, sizeof pb, why, sizeof why);
  CHECK(ac && ac->params[0].nfields == 2 && ac->params[0].fields[1].nalias == 1 &&
        ac->params[0].fields[1].alias_at[0] == 24 && ac->params[0].fields[0].nalias == 0);
  kc_contract_free(ac);
  /* Not this launch's tensors, or no layout: no contract, and why. */
  memcpy(pb + 8, &stray, 8);
  CHECK(kc_contract_from_annotation(a, &kk, pb, sizeof pb, why, sizeof why) == NULL &&
        strstr(why, "out1") && strstr(why, "occurs 0 times"));
  memcpy(pb + 8, &out, 8);
  kk.nparams = -1;
  CHECK(kc_contract_from_annotation(a, &kk, pb, sizeof pb, why, sizeof why) == NULL &&
        strstr(why, "layout"));

  kcheck_annotate_clear();
  CHECK(kc_contract_annotation_current() == NULL &&
        kcheck_annotation_describe(desc, sizeof desc) == 0);
  CHECK(kcheck_annotate_end() == -1);
}

int main(void) {
  test_expr();
  test_good();
  test_errors();
  test_launch_and_arity();
  test_attrs();
  test_torch_shapes();
  test_torch_views();
  test_api();
  return CHECK_DONE("test_contract");
}
