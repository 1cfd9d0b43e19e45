/* kcheck.h — kcheck's public C API (version 3). Programs may call these
 * when libkcheck.so is loaded; look them up with dlsym(RTLD_DEFAULT, ...)
 * to stay runnable without kcheck. */
#ifndef KCHECK_H
#define KCHECK_H

#ifdef __cplusplus
extern "C" {
#endif

/* 1: version, options, gates. 2: contracts and annotations. 3: input
 * generators. 4: op-level checks for framework bindings, options by name,
 * the kernels a thread launched. */
#define KCHECK_API_VERSION 4

/* The library's version string, e.g. "0.1.0". */
const char *kcheck_version(void);
/* KCHECK_API_VERSION of the loaded library (since version 2). */
int kcheck_api_version(void);
/* Prints the KCHECK_OPTIONS table to stderr. */
void kcheck_print_options(void);
/* Checks a KCHECK_OPTIONS value as a run would, starting nothing: returns
 * the number of problems that would stop the run (each printed on stderr:
 * an unknown gate or race strategy, a list that names nothing, a kernel
 * regex that cannot be used, an unreadable suppressions file); -1, checking
 * nothing, in a process kcheck is active in. */
int kcheck_check_options(const char *spec);
/* Prints the gate registry (id, severity, contract) to stderr. */
void kcheck_print_gates(void);

/* ---- contracts (version 2): YAML files stating what kernels compute ---- */

/* Loads a contract file, or every *.yaml / *.yml of a directory, into the
 * process's registry. Returns the number of contracts loaded, or -1 when
 * the file has errors (printed to stderr as "kcheck: FILE:LINE:COL: error:
 * ..."; nothing is loaded then). */
int kcheck_contract_load(const char *path);
/* Validates a file or directory without loading it; prints each problem as
 * "FILE:LINE:COL: error: message". Returns the number of problems. */
int kcheck_contract_lint(const char *path);
/* As kcheck_contract_load for YAML text; source_name names it in messages. */
int kcheck_contract_register_yaml(const char *yaml_text, const char *source_name);
/* Checks an oracle profile spec ("preset[:key=value...]", a contract's
 * profile) with the oracle's parser (version 4): 0, or -1 with the reason
 * in err (n bytes; an unknown preset's lists the known ones). */
int kcheck_profile_check(const char *spec, char *err, unsigned long n);

/* ---- annotations (version 2): a framework says what the next launches of
 * this thread compute. Declare with begin, one tensor call per tensor, end;
 * the annotation is then in force for the launches this thread makes until
 * kcheck_annotate_clear() or the next begin. Each returns 0, or -1 with a
 * "kcheck:" warning on stderr (unknown op, bad profile, bad role/format). */

/* op: an oracle op name ("matmul", "softmax", "add", ...); profile: an
 * oracle profile spec ("bf16_fp32acc", "fp32:math=fast") or NULL. */
int kcheck_annotate_begin(const char *op, const char *profile);
/* role: "in", "out" or "inout"; format: "fp32", "bf16", "int32", ...;
 * shape: rank extents; strides: rank strides in elements, or NULL for
 * contiguous row-major. */
int kcheck_annotate_tensor(const char *role, void *ptr, const char *format, int rank,
                           const long *shape, const long *strides);
int kcheck_annotate_end(void);
void kcheck_annotate_clear(void);
/* Writes a one-line description of the annotation in force on this thread
 * ("softmax profile=fp32 tensors=2 in:fp32:0x...:[4,8/8,1] ..."); returns
 * its length, 0 when none is in force. For logs and tests. */
int kcheck_annotation_describe(char *buf, unsigned long n);

/* ---- findings ---- */

/* Names the test the process runs now (e.g. a pytest node id; NULL or "":
 * none). Every later violation record carries it as "test"; the pytest
 * plugin calls it around each test. Children inherit it through the
 * KCHECK_TEST environment variable. */
void kcheck_set_test(const char *id);
/* The path of this process's report, or NULL when it writes none. */
const char *kcheck_report_path(void);
/* Every violation found so far reported (findings are symbolised on a
 * thread of kcheck's own) and every record so far written to the report
 * file, before it returns; the pytest plugin calls it before it reads a
 * test's violations. */
void kcheck_flush(void);

/* ---- generated inputs (version 3) ---- */

/* Regenerates the inputs a violation's evidence names (exposed_by:
 * generator, transform, seed): rows x cols elements of `format` ("fp32",
 * "bf16", ...), packed little-endian into out, exactly as kcheck fed input
 * k of the kernel when called with seed + k and that input's role (0 for
 * the first input and matmul's A, 1 for the second and matmul's B, 2 from
 * the third on; rows: the product of all dims but the last). transform:
 * NULL or "none", "huge", "tiny", "subnormal", "zeros". Returns 0, or -1
 * for an unknown generator, transform or format. */
int kcheck_generate(const char *generator, const char *transform, const char *format, int role,
                    long long rows, long long cols, unsigned long long seed, void *out);

/* ---- op-level checks (version 4): a framework binding (python/kcheck/torch)
 * judges a whole op, however many kernels it launched, on host copies of
 * its inputs (taken before the op) and outputs (after it). */

/* A tensor in host memory: strides in elements (NULL: contiguous). */
struct kcheck_tensor {
  const char *name; /* the op argument it is ("self", "mat2", "out", ...) */
  const void *data;
  const char *format; /* "fp64", "fp32", "bf16", "fp16", ... */
  int rank;
  const long *shape;
  const long *strides;
};

/* Policy for one op call (the same options as launches: check_first,
 * clean_limit, op_clean_limit per op name, sample, time_budget,
 * max_checks). key names the signature: op, dtypes, shapes, strides,
 * profile. Returns 1: check it (counted as a check now); 0: do not (the
 * reason in why). */
int kcheck_op_decide(const char *op, const char *key, char *why, unsigned long n);

enum {
  KCHECK_OP_PASS = 0,
  KCHECK_OP_VIOLATION = 1,
  KCHECK_OP_INCONCLUSIVE = 2,
  KCHECK_OP_ERROR = -1
};
/* Judges out = op(in...) under profile (an oracle spec) with attrs
 * ("axis=-1 eps=1e-05 alpha=1 beta=0 causal=1 scale=0.125 transpose_b=1
 * activation=gelu"), as gate `gate` ("oracle", ...). A failing verdict is
 * reported as that gate's violation: context_json (an object: op,
 * overload, stack, kernels, profile and settings, regenerate) with gate,
 * message and evidence added. result_json gets the gate's result object
 * (status, verdict, class, coverage; or status "error" and reason).
 * fail_mask: the verdicts that are violations, bit (1 << v) for enum
 * oc_verdict_kind v (0: every failing verdict; a bit no verdict has: none,
 * judge only).
 * Returns a KCHECK_OP_* status. */
int kcheck_op_judge(const char *gate, const char *op, const char *profile, const char *attrs,
                    int nin, const struct kcheck_tensor *in, const struct kcheck_tensor *out,
                    unsigned fail_mask, const char *context_json, char *result_json,
                    unsigned long n);
/* The generated-input trials gate `gate` ("nonfinite", "precision",
 * "extremes") runs for oracle op `op`, one per line "generator transform
 * seed" (seed: of input 0; input k uses seed + k, as kcheck_generate
 * takes it), into buf; returns how many, -1 for an unknown gate, 0 when the
 * gate is not enabled. fail_mask (for kcheck_op_judge) gets the verdicts
 * that are the gate's violations: bit (1 << v) for v = 3 fail_precision,
 * 4 fail_value, 5 fail_special. */
int kcheck_op_trials(const char *gate, const char *op, char *buf, unsigned long n,
                     unsigned *fail_mask);
/* Reports a violation of gate `gate` found by the binding itself (coverage:
 * output elements never written; immutability: an input changed):
 * context_json as for kcheck_op_judge, with its own "evidence". */
void kcheck_op_report(const char *gate, const char *message, const char *context_json);
/* Ends a check: its outcome and cost go to the policy, record_json (an
 * object) is written as an "op_check" record. */
void kcheck_op_done(const char *op, const char *key, int clean, double seconds,
                    const char *record_json);
/* Writes a binding's record ("op_skip", "torch", "torch_summary"). */
void kcheck_record(const char *type, const char *record_json);

/* The byte verdicts of the coverage, immutability and bounds gates (the
 * C gates' own, on their shadow buffers): a binding passes its host copies.
 * Each looks at n bytes in units of `unit` bytes (an element; 1: bytes),
 * returns how many units it counts and stores the index of the first and
 * the last of them in first and last (either may be NULL; -1 for none). */
/* Immutability: units whose bytes differ between before and after. */
unsigned long long kcheck_bytes_changed(const void *before, const void *after, unsigned long long n,
                                        unsigned unit, long long *first, long long *last);
/* Coverage: units never written by two runs whose outputs started as
 * poison_a and poison_b bytes: units that kept both fills, or (may_differ
 * 0: a written unit gets the same bytes in both runs) that differ. */
unsigned long long kcheck_bytes_unwritten(const void *run_a, const void *run_b,
                                          unsigned long long n, unsigned unit, int poison_a,
                                          int poison_b, int may_differ, long long *first,
                                          long long *last);
/* Bounds: bytes of a guard zone that no longer hold its fill byte. */
unsigned long long kcheck_bytes_not_fill(const void *zone, unsigned long long n, int fill,
                                         long long *first, long long *last);

/* The value of option `name` as text (after KCHECK_OPTIONS was parsed):
 * its length, or -1 for an unknown name. */
int kcheck_option(const char *name, char *buf, unsigned long n);
/* The loaded contracts that name a torch op (torch_op: mylib::rmsnorm),
 * as a JSON array of {torch_op, op, profile, attrs, args, where} into buf;
 * returns the JSON's length (buf too small: truncated, like snprintf). */
long kcheck_torch_op_contracts(char *buf, unsigned long n);
/* Brackets a binding's own device work on this thread (copies, re-runs on
 * its own tensors): launches inside are neither counted nor checked. */
void kcheck_own_begin(void);
void kcheck_own_end(void);
/* The binding's private device memory pool (device_mem category
 * torch_pool): with check, whether `bytes` more fit device_mem_budget (0;
 * -1 refused, counted, the reason into why); without, the pool holds
 * `bytes` now (accounted, never refused). */
int kcheck_torch_pool(unsigned long long bytes, int check, char *why, unsigned long n);
/* While on, no launch of any thread is checked (they run as if kcheck
 * were not loaded): the PyTorch binding's timed step. */
void kcheck_checks_pause(int on);
/* Launches made so far by the calling thread. */
unsigned long long kcheck_thread_launches(void);
/* The demangled names of the kernels the calling thread launched since its
 * launch count was `since` (the last 32 at most), one per line, into buf.
 * Returns how many launches that was (may exceed the names given). */
long long kcheck_thread_kernels(unsigned long long since, char *buf, unsigned long n);

/* ---- the guard-zone allocator (the audit's bounds gate) ----
 * A non-caching device allocator for PyTorch's CUDAPluggableAllocator
 * (torch.cuda.memory.CUDAPluggableAllocator(path, "kcheck_guard_alloc",
 * "kcheck_guard_free")): each allocation is a driver allocation of its
 * own, its data (256-byte aligned) between guard zones of 0xCB bytes, 256
 * before it and 256 plus the rounding to 256 bytes after it. stream is a
 * cudaStream_t. kcheck_guard_alloc returns NULL for size 0 or a failure. */
void *kcheck_guard_alloc(unsigned long size, int device, void *stream);
void kcheck_guard_free(void *ptr, unsigned long size, int device, void *stream);
/* The byte each new allocation's data is filled with from now on (-1:
 * none, the default); returns the previous one. */
int kcheck_guard_fill(int byte);
/* The allocator's live allocations. */
long kcheck_guard_live(void);
/* Waits for the device and reads every live allocation's guard zones:
 * returns how many allocations had a guard byte changed since the last
 * check (those freed meanwhile included; each zone is filled again), or
 * -1 when the driver failed. buf gets a JSON array of the first 16 (the
 * live allocations' first, then the freed ones'): ptr
 * and size (the data as allocated), side ("after_end" when a byte past
 * the end changed, else "before_start"), bytes_past_end (0: the first
 * byte after the data) or bytes_before_start (1: the byte just before),
 * changed_bytes_before, changed_bytes_after, written (hex, the zone from
 * its first changed byte, up to 16 bytes), freed; on a failure
 * {"error": the driver's error}. */
long kcheck_guard_check(char *buf, unsigned long n);

#ifdef __cplusplus
}
#endif

#endif
