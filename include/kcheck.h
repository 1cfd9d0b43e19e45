/* kcheck.h — kcheck's public C API (version 3). Programs may call these
 * when libkcheck.so is loaded; look them up with dlsym(RTLD_DEFAULT, ...)
 * to stay runnable without kcheck. */
#ifndef KCHECK_H
#define KCHECK_H

#ifdef __cplusplus
extern "C" {
#endif

/* 1: version, options, gates. 2: contracts and annotations. 3: input
 * generators. */
#define KCHECK_API_VERSION 3

/* The library's version string, e.g. "0.1.0". */
const char *kcheck_version(void);
/* KCHECK_API_VERSION of the loaded library (since version 2). */
int kcheck_api_version(void);
/* Prints the KCHECK_OPTIONS table to stderr. */
void kcheck_print_options(void);
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

#ifdef __cplusplus
}
#endif

#endif
