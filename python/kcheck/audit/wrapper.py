"""The wrapper op: the whole candidate as one custom op,
kcheck_audit::candidate, which the binding sees and judges from a
generated torch_op contract. A KernelBench load_inline module exposes
pybind functions, not dispatcher ops: without the wrapper the binding
would see nothing of the candidate.

Its arguments are the task's tensor inputs (in0, in1, ...) and, when the
reference's parameters were aligned into the candidate, those parameters
(p_<the reference's name>), passed through torch.func.functional_call so that generated
inputs reach the weights too. Non-tensor inputs stay constants."""
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

    def _impl(self, *tensors):
        n = len(self.positions)
        args = list(self.inputs)
        for k, pos in enumerate(self.positions):
            args[pos] = tensors[k]
        if self.param_names:
            params = dict(zip(self.param_names, tensors[n:]))
            out = torch.func.functional_call(self.model, params, tuple(args))
        else:
            out = self.model(*args)
        if isinstance(out, (tuple, list)):
            out = out[0]
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
