/* test/fakecuda/fakecuda.h — the public side of the CPU stand-in for the
 * CUDA driver (built as libcuda.so.1 for GPU-free tests): the kernel ABI,
 * the registry of C "kernels", and the documented execution model and knobs.
 *
 * EXECUTION MODEL
 *
 * Every launch runs synchronously on the calling thread; streams are handles
 * and events record a counter. The device has FAKECUDA_SMS SMs (default 132).
 * A kernel is a C function called once per BLOCK; it loops over its threads.
 *
 * Blocks are scheduled in waves. With A available SMs (the SMs of the
 * launching stream's context — a green context has fewer — minus SMs held by
 * a resident kc_occupier) and B blocks per SM (min of 32, 2048 / threads per
 * block, and 233472 / round_up(static + dynamic shared, 1024)), one wave holds
 * A * B blocks in linear block-index order. Waves run one after another.
 * Inside a wave the blocks run one at a time in a pseudo-random permutation
 * whose seed mixes FAKECUDA_ORDER_SEED, A, B, the grid and block shape, the
 * wave index and the resident occupier's seed. Hence:
 *   - identical launches under identical conditions run blocks in the same
 *     order (results are reproducible);
 *   - changing the SM count (green context, occupier), the dynamic shared
 *     memory or the seed changes the order, so an order-dependent kernel
 *     changes its result while an order-independent one does not.
 * FAKECUDA_ORDER_JITTER=1 additionally mixes a per-launch counter into the
 * seed, to imitate a GPU where plain repetition already varies.
 *
 * Block i of a wave sits on SM avail[(i + rot) % A] (rot from the same seed)
 * in slot i / A; its shared memory is that slot's region of the SM's
 * persistent 228 KiB buffer. Nothing clears these buffers, so a block that
 * reads shared memory it never wrote sees what an earlier block left there.
 *
 * Dynamic shared memory above 48 KiB - static needs
 * cuFuncSetAttribute/cuKernelSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES), as
 * on the real driver; static + dynamic may not exceed 232448 bytes.
 *
 * KCHECK'S PERTURBATION KERNELS (launched from kcheck's own PTX, whose
 * `.entry` names bind to these C implementations):
 *
 *   extern "C" __global__ void kc_scrub_shared(unsigned long long seed);
 *     Fills all of the block's shared memory (static + dynamic as launched)
 *     with a xorshift pattern from seed, the SM id and the block index.
 *     Launch with 232448 bytes of dynamic shared memory (one block per SM)
 *     and one block per SM of the context to cover every SM.
 *
 *   extern "C" __global__ void kc_occupier(volatile unsigned int *release,
 *                                          unsigned long long seed,
 *                                          unsigned long long max_ns);
 *     On a GPU each block spins until *release != 0 or max_ns passed,
 *     holding its SM. Here the launch returns at once and the SMs its blocks
 *     landed on become "occupied": later launches on any stream avoid them
 *     and their order mixes in `seed`, until the occupier is released: when
 *     *release is seen non-zero (checked at every launch and sync), at
 *     cuCtxSynchronize, or at a synchronize of the stream it was launched on.
 *     release may be NULL (then only a sync releases it).
 *
 *   extern "C" __global__ void kc_hammer(unsigned int *buf, unsigned long long words,
 *                                        unsigned long long iters);
 *   extern "C" __global__ void kc_flush_l2(unsigned int *buf, unsigned long long words);
 *     Touch the buffer (read-modify-write / write); no effect on ordering.
 *
 *   extern "C" __global__ void kc_compare(const unsigned *a, const unsigned *b,
 *                                         unsigned long long words,
 *                                         unsigned long long *out);
 *     out[0] += number of differing words, out[1] = max(out[1], ~first
 *     index) (the caller zeroes out[]).
 *
 *   extern "C" __global__ void kc_compare_table(const struct kc_cmp_table t,
 *                                               unsigned long long *out,
 *                                               unsigned long long seed,
 *                                               unsigned long long *hout);
 *     kc_compare for each of t.n (<= 64) regions: a[r] against b[r] over
 *     words[r] words into out[2r] and out[2r+1]; with hout non-NULL, also
 *     hout[2r], hout[2r+1] += a[r]'s two hash lanes (region_hash.h);
 *     start[] (chunks) is the GPU's work split and is ignored here.
 *
 *   extern "C" __global__ void kc_hash_table(const struct kc_cmp_table t,
 *                                            unsigned long long seed,
 *                                            unsigned long long *out,
 *                                            unsigned *done,
 *                                            unsigned long long *pub);
 *     out[2r], out[2r+1] += the two lanes of the seeded hash of a[r]'s
 *     words[r] words (libkcheck/exec/kernels/region_hash.h, the device's
 *     definition); b[] and start[] are ignored. With pub (mapped host
 *     memory), out[0 .. 2n) is then moved there (out[] left zeroed) and
 *     *done left 0.
 *
 *   extern "C" __global__ void kc_copy_hash_table(const struct kc_cmp_table t,
 *                                                 unsigned long long seed,
 *                                                 unsigned long long *out,
 *                                                 unsigned *done,
 *                                                 unsigned long long *pub);
 *     b[r] = a[r] over words[r] words, and out[2r], out[2r+1] += the two
 *     lanes of the seeded hash of those words, published as kc_hash_table's;
 *     start[] is ignored.
 *
 * ENVIRONMENT
 *   FAKECUDA_SMS=N            SMs of the device (default 132, 1..1024)
 *   FAKECUDA_ORDER_SEED=N     block-order seed (default 0)
 *   FAKECUDA_ORDER_JITTER=1   vary the order on every launch
 *   FAKECUDA_MEM_GB=N         device memory size (default 16)
 *   FAKECUDA_FAIL_AT=N        the N-th counted call fails (1-based)
 *   FAKECUDA_FAIL_CODE=N      the error it returns (default CUDA_ERROR_UNKNOWN)
 *   FAKECUDA_FAIL_SILENT=1    instead it returns CUDA_SUCCESS without doing its
 *                             work (a copy that copies nothing)
 *   FAKECUDA_FAIL_STICKY=1    after the failure every call that needs the
 *                             context returns the same error (a device fault
 *                             ends the context: the driver's sticky error)
 *   FAKECUDA_FAIL_ENTRY=name  count only calls of this entry (a trailing '*'
 *                             matches a prefix)
 *   FAKECUDA_CALLS_OUT=path   at exit write "calls N", "failed SEQ NAME" (or
 *                             "failed none") and "entry NAME COUNT" lines;
 *                             "%p" in the path becomes the pid
 *   FAKECUDA_TRACE=1          log every entry call to stderr
 * Every exported cu* entry is counted except cuGetErrorName/cuGetErrorString.
 * A failed call has no side effects and writes no outputs.
 *
 * RULES IT ENFORCES LIKE THE DRIVER (so kcheck bugs show up on the CPU)
 *   - everything but cuInit, cuDriverGetVersion, cuGetProcAddress(_v2) and
 *     the error strings returns CUDA_ERROR_NOT_INITIALIZED before cuInit, and
 *     in a child forked after cuInit (cuInit included);
 *   - allocations, module loads, NULL-stream work, events and syncs need a
 *     current context on the calling thread (CUDA_ERROR_INVALID_CONTEXT);
 *   - during a GLOBAL or THREAD_LOCAL capture, cuCtxSynchronize, synchronous
 *     copies/memsets and cuStreamSynchronize/Query of the capturing stream
 *     fail with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidate the
 *     capture (cuStreamEndCapture then says ..._INVALIDATED) — from any
 *     thread for a GLOBAL capture, from the capturing thread only for a
 *     THREAD_LOCAL one, never from a thread in RELAXED mode — except
 *     cuCtxSynchronize, which fails and breaks every other thread's active
 *     capture in any mode (as seen on driver 580); work or
 *     cuStreamIsCapturing on the legacy NULL stream gives ..._IMPLICIT;
 *   - launches copy their parameters at launch/capture time;
 *   - CUkernel handles are rejected by cuFunc* queries and CUfunction
 *     handles by cuKernel* queries (CUDA_ERROR_INVALID_HANDLE); launching a
 *     CUkernel cast to CUfunction works;
 *   - destroyed handles stay allocated and are rejected afterwards;
 *   - freed/unmapped device memory faults when touched; each allocation is
 *     followed by an inaccessible guard page; VMM mappings are inaccessible
 *     until cuMemSetAccess;
 *   - cuMemGetAddressRange of a VMM address gives its cuMemMap piece, the
 *     RANGE_START_ADDR/RANGE_SIZE attributes the whole reservation;
 *   - a cooperative launch larger than one wave fails with
 *     CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE.
 * Images: NUL-terminated text; every `.entry NAME` binds NAME to the
 * registered kernel of that name (an unregistered name loads but
 * cuModuleGetFunction/cuLibraryGetKernel say CUDA_ERROR_NOT_FOUND); ELF
 * cubins and fatbins give CUDA_ERROR_NO_BINARY_FOR_GPU.
 * cuGetProcAddress(_v2) follows fakecuda_procs.inc (from cudaTypedefs.h):
 * a name at a version gives the newest exported form not newer than it;
 * PER_THREAD_DEFAULT_STREAM picks the _ptsz/_ptds form where one exists.
 * Green contexts: SM resources split in groups of 8 (of 1 when the device
 * has fewer than 16 SMs); group i of a split covers SMs [i*n, (i+1)*n).
 */
#ifndef FAKECUDA_H
#define FAKECUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct fk_dim3 {
  unsigned x, y, z;
};

/* What one block of a C kernel sees. */
struct fk_launch_ctx {
  struct fk_dim3 blockIdx;
  struct fk_dim3 gridDim;
  struct fk_dim3 blockDim;
  unsigned char *shared;  /* this block's shared memory: static part, then dynamic */
  size_t static_shared;   /* bytes of the static part (the kernel's declared size) */
  size_t dynamic_shared;  /* bytes of the dynamic part (as launched) */
  unsigned smid;          /* simulated SM this block runs on */
  unsigned nsm;           /* SMs available to this launch */
  unsigned long long seq; /* position of this block in the launch's execution order */
};

/* params[i] points to the bytes of parameter i (laid out at natural
 * alignment in one buffer, as the driver copies them at launch). */
typedef void (*fk_kernel_fn)(const struct fk_launch_ctx *ctx, void *const *params);

#define FK_MAX_PARAMS 32

/* One registered kernel. align[i] == 0 means: the largest power of two
 * (at most 8) dividing size[i]. */
struct fk_kernel_def {
  const char *name; /* mangled name, as in `.entry NAME` */
  fk_kernel_fn fn;
  unsigned nparams;
  unsigned short size[FK_MAX_PARAMS];
  unsigned short align[FK_MAX_PARAMS];
  unsigned static_shared; /* bytes of static __shared__ */
  int order_dependent;    /* documentation for tests: result depends on block order */
};

/* Registers an extra kernel (test code); the definition must outlive the
 * process. Returns 0, or -1 when the name is taken or the table is full. */
int fakecuda_register_kernel(const struct fk_kernel_def *def);
/* The definition bound to a name, or NULL. */
const struct fk_kernel_def *fakecuda_find_kernel(const char *name);
/* The built-in table, ending with a {NULL} row. */
const struct fk_kernel_def *fakecuda_builtin_kernels(void);

/* Mangled names of the planted kernels (see fakecuda_kernels.c). */
#define FK_K_VECADD "_Z6vecaddPKfS0_Pfi" /* (const float *a, const float *b, float *c, int n) */
#define FK_K_SCALE "_Z5scalePffi"        /* (float *x, float s, int n) */
#define FK_K_FILL "_Z8fill_i32Piii"      /* (int *out, int value, int n) */
#define FK_K_TI_ADD "_Z13ti_add_kernel8TIParams" /* (struct fk_ti_params p), 1048 bytes */
#define FK_K_VEC_ELEM                                                                              \
  "_ZN2fk29vectorized_elementwise_kernelILi4ENS_6MulAddIfEESt5arrayIPcLm3EEEEviT0_T1_"
#define FK_K_LAST_WRITER "_Z11last_writerPi"       /* (int *out)                          racy */
#define FK_K_NEIGHBOR "_Z13neighbor_readPiS_i"     /* (int *buf, int *out, int n)        racy */
#define FK_K_FLOAT_ACCUM "_Z11float_accumPKfPfi"   /* (const float *x, float *sum, int n) racy */
#define FK_K_UNINIT_SHARED "_Z13uninit_sharedPj"   /* (unsigned *out)                   racy */
#define FK_K_MULTI_PTR "_Z9multi_ptr11MultiParams" /* (struct fk_multi_params) below */
#define FK_K_DISJOINT "_Z14block_disjointPi"       /* (int *out)                          clean */
/* (const int *x, unsigned long long *sum, int n)                             clean */
#define FK_K_ATOMIC_SUM "_Z10atomic_sumPKiPyi"
#define FK_K_SHARED_REV "_Z14shared_reversePKiPi" /* (const int *in, int *out)           clean */
/* Contract bugs: (const float *a, float *out, int n) / (float *x, float *out, int n) */
#define FK_K_TAIL_UNWRITTEN "_Z14tail_unwrittenPKfPfi" /* skips the last n % 128 outputs */
#define FK_K_INPUT_SCRATCH "_Z13input_scratchPfS_i"    /* writes into its input x */
#define FK_K_OOB_TAIL_WRITE "_Z14oob_tail_writePKfPfi" /* writes out[n] when n % 128 != 0 */
/* Oracle bugs and their correct counterparts: (const float *x, float *out, int n)
 * and (const float *A, const float *B, float *C, int M, int N, int K), row-major. */
#define FK_K_EXP_FAST_WRONG "_Z14exp_fast_wrongPKfPfi" /* degree-5 Taylor exp: ulps off */
#define FK_K_EXP_CORRECT "_Z11exp_correctPKfPfi"       /* expf */
/* expf, but an infinite input gives 0: wrong at +Inf only (nonfinite, on a vector) */
#define FK_K_EXP_INF_ZERO "_Z12exp_inf_zeroPKfPfi"
#define FK_K_GEMM_FP16ACC "_Z12gemm_fp16accPKfS0_Pfiii" /* running sum rounded to fp16 */
#define FK_K_GEMM_FP32ACC "_Z12gemm_fp32accPKfS0_Pfiii" /* fp32 accumulation */
/* Bugs for the adversarial gates, right on the application's own inputs and
 * shapes, and their correct counterparts (vecadd for tiled_add_bug). Row
 * kernels: (const float *x, float *out, int rows, int cols), one block per
 * row; out is [rows] for rowmax, [rows, cols] otherwise; layernorm adds
 * (..., float eps). */
#define FK_K_ROWMAX_FMAXF "_Z12rowmax_fmaxfPKfPfii"     /* fmaxf drops NaN (nonfinite) */
#define FK_K_ROWMAX "_Z6rowmaxPKfPfii"                  /* propagates NaN */
#define FK_K_TILED_ADD_BUG "_Z13tiled_add_bugPKfS0_Pfi" /* (a, b, out, n): n % 64 tail wrong */
#define FK_K_SOFTMAX_NOMAX "_Z13softmax_nomaxPKfPfii"   /* no max shift: overflow (extremes) */
#define FK_K_SOFTMAX_ROWS "_Z12softmax_rowsPKfPfii"     /* max, sum of exp(x - max), divide */
#define FK_K_LAYERNORM_ONEPASS "_Z17layernorm_onepassPKfPfiif" /* E[x^2] - mean^2 (precision) */
#define FK_K_LAYERNORM_TWOPASS "_Z17layernorm_twopassPKfPfiif" /* mean, then squared deviations */
#define FK_K_SCRUB "kc_scrub_shared"
#define FK_K_OCCUPIER "kc_occupier"
#define FK_K_HAMMER "kc_hammer"
#define FK_K_FLUSH_L2 "kc_flush_l2"
#define FK_K_COMPARE "kc_compare"
#define FK_K_COMPARE_TABLE "kc_compare_table"
#define FK_K_HASH_TABLE "kc_hash_table"
#define FK_K_COPY_HASH_TABLE "kc_copy_hash_table"

/* The struct parameter of FK_K_MULTI_PTR, like PyTorch's multi-tensor
 * kernels' (dozens of tensors, each its own allocation here): block 0 sets
 * t[i][j] = 2 * t[i + 1][j] for every even i with i + 1 < count and j < n;
 * when racy is non-zero, t[count - 1] is left out of that (neither read
 * nor written by it) and every block writes its index to t[count - 1][0]
 * (the last writer wins: order-dependent). count <= FK_MULTI_MAX. */
#define FK_MULTI_MAX 72
struct fk_multi_params {
  unsigned long long n, count, racy;
  float *t[FK_MULTI_MAX];
};

/* The TensorIterator-like struct parameter of FK_K_TI_ADD: out[i] =
 * a[i] + alpha * b[i] for float; pointers at offsets 16, 528 and 1032, the
 * rest filler that must not be mistaken for pointers. */
struct fk_ti_params {
  uint32_t n;          /* 0 */
  uint32_t flags;      /* 4 */
  float alpha;         /* 8 */
  uint32_t pad0;       /* 12 */
  char *out;           /* 16 */
  int64_t sizes[63];   /* 24 */
  const char *a;       /* 528 */
  int64_t strides[62]; /* 536 */
  const char *b;       /* 1032 */
  int64_t elem_size;   /* 1040 */
};

/* The functor of FK_K_VEC_ELEM: data[0][i] = a * data[1][i] + b * data[2][i]. */
struct fk_muladd {
  float a, b;
};

#ifdef __cplusplus
}
#endif
#endif
