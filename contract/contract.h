/* contract/contract.h — kernel contracts: what a kernel computes, stated in
 * a YAML file (op, parameters as tensors/scalars, precision profile, domain,
 * launch shape). Parsing, validation, loading, matching to kernels and the
 * evaluation of a contract against captured parameter bytes. */
#ifndef KC_CONTRACT_H
#define KC_CONTRACT_H

#include <stddef.h>
#include <stdint.h>

#include "attrs.h"
#include "profile.h"

struct kc_kernel;
struct kc_launch_info;

#define KC_CONTRACT_MAX_RANK 8

/* Limits on what a contract file may ask of kcheck: each is reported with
 * file:line:col and the limit when exceeded (the input is refused, kcheck
 * goes on without it). */
#define KC_CONTRACT_MAX_FILE_BYTES (1u << 20) /* one contract file */
#define KC_CONTRACT_MAX_YAML_DEPTH 32         /* nested mappings and sequences */
#define KC_CONTRACT_MAX_YAML_NODES 200000     /* nodes after alias expansion */
#define KC_CONTRACT_MAX_CONTRACTS 4096        /* contracts in one set */
#define KC_CONTRACT_MAX_PARAMS 256            /* parameters (and fields) of one contract */
#define KC_CONTRACT_EXPR_MAX_LEN 4096         /* characters of one expression */
#define KC_CONTRACT_EXPR_MAX_DEPTH 64         /* nesting of parentheses, calls, unary operators */
#define KC_CONTRACT_EXPR_MAX_NODES 1024       /* operators and operands of one expression */
#define KC_CONTRACT_EXPR_MAX_TREE 256 /* depth of the expression tree (evaluation recursion) */

/* Checks YAML text against KC_CONTRACT_MAX_YAML_DEPTH and KC_CONTRACT_MAX_YAML_NODES
 * before it is loaded. 0 within the limits; -1 with the position and a
 * message naming the limit (contract/yaml_limits.c). */
int kc_contract_yaml_check_limits(const char *text, size_t len, int *line, int *col, char *msg,
                                  size_t n);

/* ------------------------------------------------------------ expressions */

/* A compiled integer expression over scalar parameter names: + - * / %
 * unary -, ceil_div(a,b) min(a,b) max(a,b), parentheses, and for domain
 * constraints == != < <= > >= ! && ||. Values are 64-bit signed. */
struct kc_contract_expr;

/* The launch dimensions as expression variables: gridDim.x/y/z and
 * blockDim.x/y/z are variables KC_CONTRACT_LAUNCH_VAR0 + 0..5 (after the 64
 * scalars), so shapes, strides and the domain can use extents the launch
 * sets (one block per row). The launch section cannot (it computes them). */
#define KC_CONTRACT_MAX_SCALARS 64
#define KC_CONTRACT_LAUNCH_VARS 6
#define KC_CONTRACT_LAUNCH_VAR0 KC_CONTRACT_MAX_SCALARS
/* 0..5 for "gridDim.x" .. "blockDim.z" (len bytes of name), else -1. */
int kc_contract_launch_var(const char *name, size_t len);

/* Resolves a name to the index of a scalar (>= 0), or -1 when unknown. */
typedef int (*kc_contract_expr_lookup_fn)(void *ctx, const char *name, size_t len);

/* Compiles text; on error returns NULL, writes why to err and the 0-based
 * offset of the fault inside text to *err_pos. allow_bool admits
 * comparisons and logical operators. */
struct kc_contract_expr *kc_contract_expr_compile(const char *text, int allow_bool,
                                                  kc_contract_expr_lookup_fn lookup, void *ctx,
                                                  char *err, size_t n, int *err_pos);
/* Evaluates with vars[i] the value of scalar i. 0 on success; -1 on
 * division by zero or overflow (why in err). */
int kc_contract_expr_eval(const struct kc_contract_expr *e, const int64_t *vars, int64_t *out,
                          char *err, size_t n);
const char *kc_contract_expr_text(const struct kc_contract_expr *e);
/* Whether e is <= 0 for every value of its scalars that is >= 0 (a shape
 * extent that can never hold an element: "0", "-n", "min(n, 0)"); *at_most
 * gets the bound. Conservative: 0 when it cannot tell. */
int kc_contract_expr_never_positive(const struct kc_contract_expr *e, int64_t *at_most);
/* Bytes of the pointee of parameter idx of an Itanium-mangled function name
 * when it is a pointer to float (4), double (8), __half or __nv_bfloat16
 * (2); 0 when the name says nothing about it (contract/mangle.c). */
int kc_contract_mangled_float_pointee(const char *mangled, int idx);
void kc_contract_expr_free(struct kc_contract_expr *e);

/* ------------------------------------------------------------ contracts */

enum kc_contract_match_kind { KC_CONTRACT_NAME, KC_CONTRACT_GLOB, KC_CONTRACT_REGEX };
enum kc_contract_role { KC_ROLE_IN, KC_ROLE_OUT, KC_ROLE_INOUT };
enum kc_contract_scalar { KC_SC_I32, KC_SC_I64, KC_SC_U32, KC_SC_U64, KC_SC_F32, KC_SC_F64 };
enum kc_contract_kind { KC_PK_TENSOR, KC_PK_SCALAR, KC_PK_STRUCT, KC_PK_OPAQUE };

/* Element formats: the oracle's float formats (enum oc_format values) and
 * integer formats numbered after them. */
enum kc_contract_intfmt {
  KC_FMT_INT8 = 100,
  KC_FMT_INT16,
  KC_FMT_INT32,
  KC_FMT_INT64,
  KC_FMT_UINT8,
  KC_FMT_UINT16,
  KC_FMT_UINT32,
  KC_FMT_UINT64,
  KC_FMT_BOOL,
};
/* Parses a format name ("fp32", "bf16", "int32", ...); -1 when unknown. */
int kc_contract_format_parse(const char *name);
const char *kc_contract_format_name(int fmt);
/* Storage bytes of one element (fp8: 1). */
int kc_contract_format_bytes(int fmt);

struct kc_contract_tensor {
  enum kc_contract_role role;
  int format;
  int rank;
  struct kc_contract_expr *shape[KC_CONTRACT_MAX_RANK];
  struct kc_contract_expr *strides[KC_CONTRACT_MAX_RANK]; /* all NULL: contiguous row-major */
};

/* One described value: a parameter, or a field of a struct parameter. */
struct kc_contract_value {
  char *name;
  enum kc_contract_kind kind; /* TENSOR or SCALAR for fields */
  uint32_t offset;            /* fields: byte offset inside the struct parameter */
  struct kc_contract_tensor tensor;
  enum kc_contract_scalar scalar;
  int scalar_index; /* index into the contract's scalar list */
  int line;
  /* Tensors: more byte offsets in the parameter bytes (absolute) that hold
   * the same pointer; shadow runs relocate them with it (annotation
   * contracts: e.g. a GEMM's C and D both the output). */
  int nalias;
  uint32_t alias_at[4];
};

struct kc_contract_param {
  struct kc_contract_value v; /* v.kind: TENSOR, SCALAR, STRUCT or OPAQUE */
  int nfields;                /* STRUCT */
  struct kc_contract_value *fields;
};

struct kc_contract_kv {
  char *key, *value;
};

struct kc_contract {
  char *file;
  int line;    /* of the contract's first key */
  char *where; /* "file:line" */
  enum kc_contract_match_kind match;
  char *pattern;
  void *regex; /* regex_t when match is REGEX */
  int nparams;
  struct kc_contract_param *params;
  /* Every scalar (parameters and struct fields), in declaration order: the
   * variables of the expressions. */
  int nscalars;
  const struct kc_contract_value **scalars;
  char *op;
  int nattrs;
  struct kc_contract_kv *attrs; /* as written, for listings */
  struct kc_attrs attr;         /* typed (attrs.def), what the judge reads */
  char *profile_spec;           /* NULL: none given */
  struct oc_profile profile;
  int nondeterminism_allowed;
  int ndomain;
  struct kc_contract_expr **domain;
  int has_launch;
  struct kc_contract_expr *grid[3], *block[3], *shmem; /* shmem may be NULL */
  int uses_launch_dims; /* shapes, strides or the domain use gridDim/blockDim */
  int nshapes;
  int64_t *shapes; /* nshapes rows of nscalars values; INT64_MIN: not given */
  /* A contract on a torch op (torch_op: mylib::rmsnorm) instead of a
   * kernel: matches no kernel; the PyTorch binding reads it through
   * kcheck_torch_op_contracts(). args: oracle input -> op argument. */
  char *torch_op;
  int ntorch_args;
  struct kc_contract_kv *torch_args;
  /* torch_op contracts: the author's shapes, [{input: [dims]}] (json_t *) */
  struct json_t *torch_shapes;
  /* torch_op contracts: {oracle input: [[view op, int...], ...]}, the view
   * chain an args entry applies to its argument (json_t *; NULL: none) */
  struct json_t *torch_views;
};

/* One problem found in a contract file. */
struct kc_contract_diag {
  char *file;
  int line, col; /* 1-based */
  char *msg;
};

struct kc_contract_set {
  int n;
  struct kc_contract **c;
  int ndiags;
  struct kc_contract_diag *diags;
};

/* Parses YAML text (source names it in messages); appends every valid
 * contract and every problem to set. Returns the number of problems. */
int kc_contract_parse_text(const char *text, size_t len, const char *source,
                           struct kc_contract_set *set);
/* Parses a file, or every *.yaml / *.yml of a directory (sorted). */
int kc_contract_parse_path(const char *path, struct kc_contract_set *set);
void kc_contract_set_free(struct kc_contract_set *set);
void kc_contract_free(struct kc_contract *c);
/* Prints diagnostics as "FILE:LINE:COL: error: message", each line after prefix. */
void kc_contract_print_diags(const struct kc_contract_set *set, const char *prefix);

/* ------------------------------------------------------------ registry */

/* Loads the `contracts` option's paths (kcheck activation). Returns the
 * number of problems; problems are printed with the "kcheck:" prefix. */
int kc_contracts_init(void);
/* Adds parsed contracts to the process registry (takes them from set).
 * Returns how many were added. */
int kc_contracts_add(struct kc_contract_set *set);
int kc_contracts_count(void);
/* Registered contract i (0 <= i < kc_contracts_count()); contracts are
 * never removed, so the pointer stays valid. */
const struct kc_contract *kc_contract_at(int i);
/* Does c's kernel matcher accept these names? */
int kc_contract_matches(const struct kc_contract *c, const char *mangled, const char *demangled);
/* The first registered contract that matches k (cached per kernel until
 * the registry changes); NULL when none. */
const struct kc_contract *kc_contract_match(const struct kc_kernel *k);
/* Adds "contract" (the matching contract's file:line, or null) to kernel
 * k's record: the core's kernel record hook. */
struct json_t;
void kc_contract_kernel_record(const struct kc_kernel *k, struct json_t *rec);
/* The contract attribute `key` (attrs:), or NULL. */
const char *kc_contract_attr(const struct kc_contract *c, const char *key);

/* ------------------------------------------------------------ evaluation */

struct kc_contract_tensor_val {
  const struct kc_contract_value *v; /* the declaration */
  uint64_t ptr;                      /* base pointer read from the parameter bytes */
  int rank;
  int64_t shape[KC_CONTRACT_MAX_RANK];
  int64_t strides[KC_CONTRACT_MAX_RANK]; /* in elements */
};

/* A contract applied to one launch's parameter bytes. */
struct kc_contract_binding {
  int nscalars;
  /* integer value of each scalar (floats: truncated), then the launch
   * dimensions at KC_CONTRACT_LAUNCH_VAR0 (gridDim.x .. blockDim.z) */
  int64_t ivals[KC_CONTRACT_MAX_SCALARS + KC_CONTRACT_LAUNCH_VARS];
  double fvals[KC_CONTRACT_MAX_SCALARS]; /* every scalar as a double */
  int has_launch_dims;                   /* the launch variables are set */
  int ntensors;
  struct kc_contract_tensor_val tensors[64];
};

/* Reads scalars and pointers from param bytes (param_offset: the kernel's
 * parameter offsets, or NULL to use natural alignment), evaluates shapes
 * and strides. 0 on success; -1 with why in err. */
int kc_contract_bind(const struct kc_contract *c, const unsigned char *param_buf, size_t param_size,
                     const uint32_t *param_offset, int nparams, struct kc_contract_binding *b,
                     char *err, size_t n);
/* kc_contract_bind with the launch's dimensions (grid[3], block[3]) as the
 * values of gridDim/blockDim; NULL: unknown (a contract that uses them then
 * fails to bind, saying so). */
int kc_contract_bind_dims(const struct kc_contract *c, const unsigned char *param_buf,
                          size_t param_size, const uint32_t *param_offset, int nparams,
                          const unsigned *grid, const unsigned *block,
                          struct kc_contract_binding *b, char *err, size_t n);
/* The inverse of kc_contract_bind for scalars: writes ivals (one per
 * scalar, in the binding's order) into param_buf at the kernel's offsets;
 * float scalars keep their bytes. 0, or -1 when a value does not fit its
 * type or lies outside the buffer (why in err). */
int kc_contract_write_scalars(const struct kc_contract *c, unsigned char *param_buf,
                              size_t param_size, const uint32_t *param_offset, int nparams,
                              const int64_t *ivals, char *err, size_t n);
/* kc_contract_bind on a captured launch (its kernel's layout). */
int kc_contract_bind_launch(const struct kc_contract *c, const struct kc_launch_info *li,
                            struct kc_contract_binding *b, char *err, size_t n);
/* The launch with its scalars set to ivals: param_buf (li->param_size
 * bytes) gets a copy of the parameters with ivals written in, b its
 * binding. 0 when the domain admits it; 1 when it does not (why in err);
 * -1 on other errors. */
int kc_contract_bind_at(const struct kc_contract *c, const struct kc_launch_info *li,
                        const int64_t *ivals, unsigned char *param_buf,
                        struct kc_contract_binding *b, char *err, size_t n);
/* -1 when every domain constraint holds; else the index of the first that
 * fails (or cannot be evaluated), with a description in err. */
int kc_contract_check_domain(const struct kc_contract *c, const struct kc_contract_binding *b,
                             char *err, size_t n);
/* Does the contract describe this launch of its kernel? 1 when it does;
 * 0 when it does not, with why in err: the parameters do not bind, a
 * domain constraint fails at the launch's own values, or the grid, block
 * (or a stated shmem) differ from the contract's launch section. Checked
 * at every contracted launch before any contract gate runs, so a contract
 * never judges a launch it does not describe (or runs on shadow buffers
 * sized for another shape). */
int kc_contract_applies(const struct kc_contract *c, const struct kc_launch_info *li, char *err,
                        size_t n);
/* Grid, block and dynamic shared memory from the launch expressions. */
int kc_contract_launch_dims(const struct kc_contract *c, const struct kc_contract_binding *b,
                            unsigned grid[3], unsigned block[3], unsigned *shmem, char *err,
                            size_t n);

/* ------------------------------------------------------------ annotations */

#define KC_CONTRACT_ANN_MAX_TENSORS 16

struct kc_contract_ann_tensor {
  enum kc_contract_role role;
  void *ptr;
  int format;
  int rank;
  long shape[KC_CONTRACT_MAX_RANK];
  long strides[KC_CONTRACT_MAX_RANK]; /* in elements */
};

/* What a framework declared with kcheck_annotate_begin/tensor/end. */
struct kc_contract_annotation {
  char op[32];
  char profile_spec[128];
  struct oc_profile profile;
  int has_profile;
  int ntensors;
  struct kc_contract_ann_tensor t[KC_CONTRACT_ANN_MAX_TENSORS];
  uint64_t serial; /* increases with every begin on this thread */
};

/* The annotation in force on the calling thread: declared by begin,
 * tensor..., end, in force from end until kcheck_annotate_clear or the next
 * begin; NULL when none. Valid until the thread's next annotate call. */
const struct kc_contract_annotation *kc_contract_annotation_current(void);
/* A contract for kernel k's launch with these parameter bytes from
 * annotation a (contract/contract_ann.c): every annotated pointer must
 * occur among the 8-byte-aligned words of the parameters (plain pointer
 * parameters or fields of struct parameters; up to 5 times: the copies are
 * relocated together), no two annotated tensors may share a pointer, and
 * k's parameter layout must be known; else NULL with why in why. Tensors
 * are named in0, out1, ... by role and position and declared in annotation
 * order; the other parameters are opaque. Free with kc_contract_free. */
struct kc_contract *kc_contract_from_annotation(const struct kc_contract_annotation *a,
                                                const struct kc_kernel *k,
                                                const unsigned char *param_buf, size_t param_size,
                                                char *why, size_t n);

#endif
