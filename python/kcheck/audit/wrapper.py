"""The wrapper op: the whole candidate as one custom op,
kcheck_audit::candidate, which the binding sees and judges from a
generated torch_op contract. A KernelBench load_inline module exposes
pybind functions, not dispatcher ops: without the wrapper the binding
would see nothing of the candidate.

Its arguments are the task's tensor inputs (in0, in1, ...) and, when the
reference's parameters were aligned into the candidate, those parameters
(p_<the reference's name>), passed through torch.func.functional_call so that generated
inputs reach the weights too. Non-tensor inputs stay constants.
Wrapper.reference runs the reference the same way, for the binding's
checks that need the reference's own result (the layouts gate's empty
variant: a custom op has no meta kernel to give even its shape)."""
import torch

NAMESPACE = "kcheck_audit"
OP = "candidate"
QUALNAME = "%s::%s" % (NAMESPACE, OP)


def input_name(i):
    return "in%d" % i


def param_name(name):
    return "p_" + name.replace(".", "_")


def signature(inputs, ref_names):
    """(wrapper argument names, tensor input positions); ref_names: the
    reference's names of the aligned parameters."""
    positions = [i for i, v in enumerate(inputs) if isinstance(v, torch.Tensor)]
    return [input_name(i) for i in positions] + [param_name(n) for n in ref_names], positions


class Wrapper:
    """Defines the op once per process; call(inputs) runs the candidate
    through it."""

    def __init__(self, model, inputs, names):
        """names: {candidate's parameter name: reference's name}."""
        self.model = model
        self.inputs = list(inputs)
        self.param_names = list(names)
        self.names, self.positions = signature(self.inputs, [names[k] for k in self.param_names])
        self.lib = torch.library.Library(NAMESPACE, "DEF")
        self.lib.define("%s(%s) -> Tensor" % (OP, ", ".join("Tensor " + n for n in self.names)))
        for key in ("CPU", "CUDA"):
            self.lib.impl(OP, self._impl, key)
        self.op = getattr(getattr(torch.ops, NAMESPACE), OP).default

    def _forward(self, model, names, tensors):
        """model's output at the op's arguments (tensors, in the op's
        order): the task's inputs with the op's in their places, the
        parameters passed under names (the model's names of them, in
        self.param_names' order) through functional_call."""
        n = len(self.positions)
        args = list(self.inputs)
        for k, pos in enumerate(self.positions):
            args[pos] = tensors[k]
        if names:
            out = torch.func.functional_call(model, dict(zip(names, tensors[n:])), tuple(args))
        else:
            out = model(*args)
        return out[0] if isinstance(out, (tuple, list)) else out

    def reference(self, ref_model, names):
        """fn(*args, **kwargs): the reference's output at the wrapper op's
        arguments (names: {candidate's parameter name: the reference's},
        as given to __init__), run with no mode on: what the layouts
        gate's empty variant compares the candidate with
        (kcheck.torch.layouts.reference_call). With the weights held as
        constants the op takes the forward's inputs only and ref_model
        holds the weights."""
        from torch.utils._python_dispatch import _disable_current_modes
        ref_names = [names[k] for k in self.param_names]

        def fn(*args, **kwargs):
            tensors = list(args) + [kwargs[n] for n in self.names[len(args):]]
            with _disable_current_modes(), torch.no_grad():
                return self._forward(ref_model, ref_names, tensors)
        return fn

    def _impl(self, *tensors):
        out = self._forward(self.model, self.param_names, tensors)
        if not isinstance(out, torch.Tensor):
            raise TypeError("the candidate returned %s, not a tensor" % type(out).__name__)
        # an op's output may not alias its inputs; an in-place candidate's
        # result is copied (what it did to its input stays visible)
        if any(out.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
               for t in tensors if t.numel() and out.numel()):
            out = out.clone()
        return out

    def call(self, inputs, params):
        tensors = [inputs[i] for i in self.positions] + [params[n] for n in self.param_names]
        return self.op(*tensors)


def hold_constants(op, constants):
    """Weights as constants on the binding's side: the wrapper op's
    contract names the reference's parameters (p_<name>), which are not
    arguments of the op here, so the entry the binding judges it by gets
    them as constants (constants: {wrapper argument name: tensor}); see
    kcheck.torch.mode.hold_constants. False where no mode or no contract
    for the op is loaded (then the op stays unjudged, as before)."""
    from kcheck.torch import mode as km
    return km.hold_constants(op, QUALNAME, constants)
