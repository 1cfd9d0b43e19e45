/* oracle/elementwise.h — exact references for elementwise ops: the correctly
 * rounded (ties-to-even) result in any format of formats.h, the documented
 * ULP budgets per math mode (ORACLE.md §3), and whole-function tables for
 * 8/16-bit inputs. Thread-safe; no MPFR global state is changed. */
#ifndef OC_ELEMENTWISE_H
#define OC_ELEMENTWISE_H

#include <stdint.h>

#include "formats.h"
#include "ops.h"
#include "profile.h" /* enum oc_math_mode */

/* Special values (x, y are doubles; "NaN" is the format's quiet NaN):
 *   add/sub/mul/div  IEEE 754: any NaN -> NaN; Inf-Inf, 0*Inf, 0/0, Inf/Inf
 *                    -> NaN; x/±0 -> ±Inf; x + (-x) -> +0; -0 + -0 -> -0.
 *   neg, abs         act on the sign bit only (NaN keeps its payload class,
 *                    neg flips and abs clears its sign).
 *   relu             NaN -> NaN; x <= 0 (-0 and -Inf included) -> +0.
 *   relu_fmax        fmaxf(x, 0): NaN -> +0; x <= 0 -> +0.
 *   clamp            min(max(x, lo), hi) with the bounds from outside the op
 *                    (oc_check_clamp): exact, NaN (x or a bound) -> NaN.
 *   gelu_erf         x*Phi(x); gelu_tanh 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3)))
 *                    with the decimal constant exact. Both, and silu = x*sigmoid(x):
 *                    NaN -> NaN, ±0 -> ±0, +Inf -> +Inf, -Inf -> -0 (the limit;
 *                    a literal x*0.5*(1+erf(..)) gives NaN there).
 *   sigmoid          NaN -> NaN, ±0 -> 0.5, +Inf -> 1, -Inf -> +0.
 *   tanh             NaN -> NaN, ±0 -> ±0, ±Inf -> ±1.
 *   exp              NaN -> NaN, ±0 -> 1, +Inf -> +Inf, -Inf -> +0.
 *   log              NaN -> NaN, ±0 -> -Inf, x < 0 -> NaN, 1 -> +0, +Inf -> +Inf.
 *   sqrt             NaN -> NaN, ±0 -> ±0, x < 0 -> NaN, +Inf -> +Inf.
 *   rsqrt            NaN -> NaN, ±0 -> ±Inf, x < 0 -> NaN, +Inf -> +0.
 * Results that underflow keep the sign of the exact value (-0 for a tiny
 * negative); overflow follows the caller's enum oc_overflow (Inf, NaN for
 * e4m3fn, or the largest finite value when saturating). Generated NaNs are
 * the format's canonical positive quiet NaN. */
/* The elementwise rows of ops.def, in their order. */
enum oc_op {
#define OC_OPDEF(id, name, arity, cls) OC_OP_IF_EW(cls, OC_OP_##id, )
#include "ops.def"
  OC_OP_COUNT
};

const char *oc_op_name(enum oc_op op); /* "add", ..., "gelu_erf", "gelu_tanh", ... */
int oc_op_parse(
    const char *name); /* elementwise ops of oc_op_find (aliases "gelu", "swish"); -1 otherwise */
int oc_op_arity(enum oc_op op); /* 1 or 2 (ops.def); 0 for an invalid op */

/* Correctly rounded op(x, y) encoded in f (y is ignored by unary ops). */
uint64_t oc_op_encode(enum oc_op op, enum oc_format f, enum oc_overflow ovf, double x, double y);
/* The same result as a double (its exact value). */
double oc_op_round(enum oc_op op, enum oc_format f, enum oc_overflow ovf, double x, double y);
/* The double path before the Ziv loop (on by default): a result the double
 * form and its error bound decide is not evaluated in MPFR. Off: every
 * result from the Ziv loop (tests compare the two). hits: results the
 * double path decided since the process started. */
void oc_ew_set_double_first(int on);
unsigned long oc_ew_double_first_hits(void);
/* The C library's exp, log, tanh and erfc are trusted to this many ulps
 * by the oracle's double paths (glibc documents 1-5 on x86-64). */
#define OC_LIBM_ULPS 16
/* Whether the C library's exp and log are within OC_LIBM_ULPS / 2 ulps of
 * MPFR's on a sample (measured once per process). */
int oc_libm_exp_log_trusted(void);

/* Table of a unary op over every bit pattern of an 8- or 16-bit format in:
 * entry i = oc_op_encode(op, out, ovf, oc_decode(in, i), 0). Built on first
 * use under a mutex (65536 MPFR evaluations: ~0.1 s for exp, ~1 s for
 * gelu_erf), then shared read-only for the life of the process. NULL for a
 * binary op or an input format wider than 16 bits. */
const uint64_t *oc_op_table(enum oc_op op, enum oc_format in, enum oc_format out,
                            enum oc_overflow ovf);

/* Documented error budget, in units in the last place of fmt, that an
 * implementation of op under the math mode may show at (x, y), measured as
 * oc_ulp_distance(fmt, result, correctly rounded reference). Sources:
 * CUDA Programming Guide accuracy tables for float (fmt fp32) and double
 * (fmt fp64; math mode does not change double); ORACLE.md §3 for Triton.
 * Absolute or relative bounds (__logf on [0.5, 2], tanh.approx's 2^-11)
 * are converted to ulps at (x, y). Composites (sigmoid = 1/(1+exp(-x)),
 * silu = x*sigmoid, gelu per its formula, computed in fp32 or fp64) come
 * from first-order propagation of each step's budget. Formats narrower
 * than fp32 assume fp32 arithmetic and one final rounding: 0 for +,-,*,/,
 * sqrt (double rounding is innocuous for inputs in fmt: 24 >= 2p+2; for
 * fp32 inputs oc_check_elementwise also accepts the fp32-then-fmt result)
 * and the sign ops, otherwise the fp32 error converted to ulps of fmt,
 * plus one. sigmoid/silu below about -87 (e^-x overflows fp32, or
 * __fdividef's divisor passes 2^126, where it returns 0) include 0.
 * Flush-to-zero is modelled by oc_check_elementwise, not here. INFINITY
 * where nothing is documented. */
double oc_ulp_budget(enum oc_op op, enum oc_format fmt, enum oc_math_mode mode, double x, double y);
/* One primitive's documented budget, the rows of ORACLE.md §3 (CUDA
 * Programming Guide, Mathematical Functions accuracy tables; Triton per its
 * PTX lowering): for float (dbl 0) or double (dbl 1) under a math mode, at
 * argument x (divisor y for div): `ulps` against the correctly rounded
 * result, plus `abs` and `rel` parts where the guide states the error that
 * way (__logf on [0.5, 2], tanh.approx). op is a primitive: div, sqrt,
 * rsqrt, exp, log, tanh, or gelu_erf standing for erf. Other ops: all 0.
 * The single source of these numbers: oc_ulp_budget above and the
 * bounds of bounds.c (softmax, norms, epilogue activations) both use it. */
struct oc_prim_budget {
  double ulps, abs, rel;
};
struct oc_prim_budget oc_primitive_budget(enum oc_op op, int dbl, enum oc_math_mode mode, double x,
                                          double y);

/* The gate rule: 1 when got (a value of fmt) is acceptable for op(x, y) under
 * the mode: special values must match the reference (NaN with NaN, Inf with
 * the same Inf), finite results within oc_ulp_budget of it. */
int oc_op_within_budget(enum oc_op op, enum oc_format fmt, enum oc_math_mode mode, double x,
                        double y, double got);

#endif
