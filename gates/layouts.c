/* gates/layouts.c — contract: the op computes its op whatever its inputs'
 * memory layout (gates/gates.def). An op-level gate: the PyTorch binding
 * re-runs a covered op with each floating input in turn transposed in
 * memory, strided, misaligned, channels_last and empty, and the oracle
 * judges each (python/kcheck/torch/mode.py, KcheckMode._layouts). A
 * kernel's launch has no tensor layout to vary (its pointers and sizes are
 * the kernel's own parameters, with no strides kcheck could change), so
 * at kernel level the gate is not applicable and says why. */
#include "gate.h"
#include "gate_util.h"

int kc_gate_layouts_run(struct kc_gate_ctx *ctx) {
  ctx->out.status = KC_GS_NOT_APPLICABLE;
  json_object_set_new(ctx->result, "reason",
                      json_string("op level only: a kernel's launch has no tensor layout to vary "
                                  "(the PyTorch binding re-runs ops with other layouts)"));
  return 0;
}
