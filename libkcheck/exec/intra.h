/* libkcheck/exec/intra.h — intra-block timing perturbation by PTX rewriting: a
 * perturbed copy of the launched kernel (libkcheck/base/ptx.h), JIT-compiled
 * once per kernel and context, used only for shadow runs. The copy sees
 * the application module's variables (.global/.const) as they are before
 * each run; the application's own launches never run it. */
#ifndef KC_INTRA_H
#define KC_INTRA_H

#include <cuda.h>
#include <stdint.h>

#include "launch.h"
struct json_t;
#include "ptx.h"

/* The copy of li's kernel with configuration cfg written: *fn to launch
 * instead of the kernel. 0; 1 when the kernel cannot be perturbed (*why:
 * no PTX, JIT failure, ...); -1 on a driver failure (*why). */
int kc_intra_prepare(struct kc_launch_info *li, const uint32_t cfg[KC_CFG_WORDS], CUfunction *fn,
                     const char **why);
/* Whether li's kernel can be perturbed (its copy built, JIT-compiled at
 * the first ask): 0, or 1 with *why as kc_intra_prepare would say it (log:
 * the run asks for the access log). Writes nothing on the device: a
 * check asks before restoring memory for a run that cannot be made. */
int kc_intra_usable(struct kc_launch_info *li, int log, const char **why);
/* What the copy of li's kernel is (after a prepare): inserted delay sites
 * (0 on the Sanitizer route), the JIT's (or loading and patching) time in
 * ms, and the route ("ptx" or "sanitizer"); 0, or -1 when there is no
 * copy. */
int kc_intra_info(struct kc_launch_info *li, int *sites, double *jit_ms, const char **route);
/* The Sanitizer route's copy of li's kernel: loading its cubin and
 * patching it (ms); 0, or -1 when its copy is not the route's. */
int kc_intra_san_times(struct kc_launch_info *li, double *load_ms, double *patch_ms);
/* Why li's kernel has no PTX when its copy is the Sanitizer route's
 * (NULL otherwise: a PTX copy, or none). */
const char *kc_intra_no_ptx(struct kc_launch_info *li);
/* Why the Sanitizer route made no copy of li's kernel (a kernel with no
 * PTX), NULL when it was not tried or made one. The string lives as long
 * as the kernel's image. */
const char *kc_intra_route_why(struct kc_launch_info *li);
/* After a run of the Sanitizer route's copy: 1 when its guard stopped an
 * access outside every allocation kcheck knows (the warp ended before it;
 * the context is untouched). The copy is given up for the kernel, *why
 * (kept, also as kc_intra_route_why) says what was stopped. 0 otherwise. */
int kc_intra_guard_stopped(struct kc_launch_info *li, const char **why);
/* The order-dependent atomics of kernel k's code (ptx.h), from its PTX or
 * else its SASS; 0, or -1 when neither is readable (*why). Cached per
 * kernel. */
int kc_intra_atomics(const struct kc_kernel *k, struct kc_ptx_atomics *a, const char **why);
/* The same without reading a SASS-only kernel's cubin: 1 when the kernel
 * has no PTX and its SASS has not been read yet (*why: the PTX's reason),
 * else as kc_intra_atomics (a SASS read earlier counts). */
int kc_intra_atomics_unread(const struct kc_kernel *k, struct kc_ptx_atomics *a, const char **why);
/* Why kernel k has no PTX kcheck can read (NULL: it has one), with no
 * copy built: the PTX route's reason, also where kc_intra_atomics read
 * the atomics from the SASS. */
const char *kc_intra_ptx_missing(const struct kc_kernel *k);
/* After a run with KC_CFG_LOG: the racing accesses of the log
 * (access.h). 1 with *ev (the word's space and address, for global memory
 * its allocation, the kernel parameter or module variable that reaches
 * it; both accesses: kind, block, thread, warp, lane, barrier epoch, PTX
 * statement and source line; how many words race), 0 none (*ev, may be
 * NULL: how many accesses were logged, and the route), -2 over the
 * log's capacity (*why: a recorded skip; *retry_stride, when not 0: a
 * block stride whose run may fit), -1 no log (*why). */
int kc_intra_conflicts(struct kc_launch_info *li, struct json_t **ev, unsigned *retry_stride,
                       const char **why);
/* Drops the copies of the kernels of an image being unloaded. */
void kc_intra_forget_image(void *image);
void kc_intra_fini(void);

#endif
