"""ATen ops that PyTorch documents as nondeterministic on CUDA, one row
each: (ATen op, when it applies, what the documentation says).

Source: torch.use_deterministic_algorithms
(https://docs.pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html,
PyTorch 2.x): the operations it lists as "normally-nondeterministic" on a
CUDA tensor, those that act deterministically under mode=True and those
that then throw a RuntimeError. Backward rows name the ATen op the
autograd engine runs. When the binding (--torch) sees one on a watched
device, with torch.are_deterministic_algorithms_enabled() False, it reports
a `nondeterminism` finding (severity warning) with cause "documented by
PyTorch", the op and the user's line, once per op; the shipped suppression
list torch-nondeterministic silences them with one line. Under
torch.use_deterministic_algorithms(True) nothing is reported here, and a
difference the kernel-level gates find is a violation like any other.
"""

# when: None (always on the device) or a function of (args, kwargs).


def _accumulate(pos):
    def when(args, kwargs):
        v = kwargs.get("accumulate", args[pos] if len(args) > pos else False)
        return bool(v)
    return when


def _reduce_sum_mean(args, kwargs):
    # scatter_reduce.two(self, dim, index, src, reduce, *, include_self)
    v = kwargs.get("reduce", args[4] if len(args) > 4 else None)
    return v in ("sum", "mean")


def _has_weights(args, kwargs):
    w = kwargs.get("weights", args[1] if len(args) > 1 else None)
    return w is not None


def _mode_max(args, kwargs):
    # _embedding_bag_backward(grad, indices, offsets, offset2bag, bag_size,
    # maximum_indices, num_weights, scale_grad_by_freq, mode, ...): 2 = max
    return kwargs.get("mode", args[8] if len(args) > 8 else 0) == 2


def _cudnn_free(args, kwargs):
    # cuDNN picks nondeterministic algorithms unless told not to
    import torch
    return not torch.backends.cudnn.deterministic


ROWS = (
    # deterministic under mode=True (a slower algorithm is used then)
    ("aten::convolution_backward", _cudnn_free,
     "torch.nn.Conv1d/Conv2d/Conv3d/ConvTranspose* when called on CUDA tensor "
     "(torch.backends.cudnn.deterministic=False)"),
    ("aten::index_add", None, "torch.index_add() when called on CUDA tensor"),
    ("aten::index_add_", None, "torch.index_add() when called on CUDA tensor"),
    ("aten::scatter_add", None, "torch.Tensor.scatter_add_() when called on a CUDA tensor"),
    ("aten::scatter_add_", None, "torch.Tensor.scatter_add_() when called on a CUDA tensor"),
    ("aten::scatter_reduce", _reduce_sum_mean,
     "torch.Tensor.scatter_reduce() when reduce='sum' or 'mean' on a CUDA tensor"),
    ("aten::scatter_reduce_", _reduce_sum_mean,
     "torch.Tensor.scatter_reduce() when reduce='sum' or 'mean' on a CUDA tensor"),
    ("aten::index_put", _accumulate(3),
     "torch.Tensor.index_put() with accumulate=True on a CUDA tensor"),
    ("aten::index_put_", _accumulate(3),
     "torch.Tensor.index_put() with accumulate=True on a CUDA tensor"),
    ("aten::_index_put_impl_", _accumulate(3),
     "torch.Tensor.index_put() with accumulate=True on a CUDA tensor"),
    ("aten::put_", _accumulate(3), "torch.Tensor.put_() with accumulate=True on a CUDA tensor"),
    ("aten::index_select_backward", None,
     "torch.index_select() when attempting to differentiate a CUDA tensor"),
    ("aten::gather_backward", None,
     "torch.gather() when called on a CUDA tensor that requires grad"),
    ("aten::embedding_dense_backward", None, "embedding backward on a CUDA tensor"),
    ("aten::_embedding_bag_dense_backward", None,
     "torch.nn.EmbeddingBag backward on a CUDA tensor"),
    ("aten::_embedding_bag_backward", _mode_max,
     "torch.nn.EmbeddingBag backward when mode='max' on a CUDA tensor"),
    # no deterministic CUDA algorithm: RuntimeError under mode=True
    ("aten::avg_pool3d_backward", None, "torch.nn.AvgPool3d backward on a CUDA tensor"),
    ("aten::_adaptive_avg_pool2d_backward", None,
     "torch.nn.AdaptiveAvgPool2d backward on a CUDA tensor"),
    ("aten::_adaptive_avg_pool3d_backward", None,
     "torch.nn.AdaptiveAvgPool3d backward on a CUDA tensor"),
    ("aten::max_pool3d_with_indices_backward", None,
     "torch.nn.MaxPool3d backward on a CUDA tensor"),
    ("aten::adaptive_max_pool2d_backward", None,
     "torch.nn.AdaptiveMaxPool2d backward on a CUDA tensor"),
    ("aten::adaptive_max_pool3d_backward", None,
     "torch.nn.AdaptiveMaxPool3d backward on a CUDA tensor"),
    ("aten::fractional_max_pool2d_backward", None,
     "torch.nn.FractionalMaxPool2d backward on a CUDA tensor"),
    ("aten::fractional_max_pool3d_backward", None,
     "torch.nn.FractionalMaxPool3d backward on a CUDA tensor"),
    ("aten::max_unpool2d", None, "torch.nn.MaxUnpool2d on a CUDA tensor"),
    ("aten::max_unpool3d", None, "torch.nn.MaxUnpool3d on a CUDA tensor"),
    ("aten::upsample_linear1d_backward", None, "interpolate(mode='linear') backward on CUDA"),
    ("aten::upsample_bilinear2d_backward", None, "interpolate(mode='bilinear') backward on CUDA"),
    ("aten::upsample_bicubic2d_backward", None, "interpolate(mode='bicubic') backward on CUDA"),
    ("aten::upsample_trilinear3d_backward", None,
     "interpolate(mode='trilinear') backward on CUDA"),
    ("aten::reflection_pad1d_backward", None, "torch.nn.ReflectionPad1d backward on CUDA"),
    ("aten::reflection_pad2d_backward", None, "torch.nn.ReflectionPad2d backward on CUDA"),
    ("aten::reflection_pad3d_backward", None, "torch.nn.ReflectionPad3d backward on CUDA"),
    ("aten::replication_pad1d_backward", None, "torch.nn.ReplicationPad1d backward on CUDA"),
    ("aten::replication_pad2d_backward", None, "torch.nn.ReplicationPad2d backward on CUDA"),
    ("aten::replication_pad3d_backward", None, "torch.nn.ReplicationPad3d backward on CUDA"),
    ("aten::nll_loss2d_forward", None, "torch.nn.NLLLoss on a CUDA tensor"),
    ("aten::_ctc_loss_backward", None, "torch.nn.CTCLoss backward on a CUDA tensor"),
    ("aten::histc", None, "torch.histc() on a CUDA tensor"),
    ("aten::bincount", _has_weights, "torch.bincount() with weights on a CUDA tensor"),
    ("aten::grid_sampler_2d_backward", None, "torch.nn.functional.grid_sample backward on CUDA"),
    ("aten::grid_sampler_3d_backward", None, "torch.nn.functional.grid_sample backward on CUDA"),
)

SOURCE = "https://docs.pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html"
BY_NAME = {name: (when, doc) for name, when, doc in ROWS}


def row_for(func):
    """(when, doc) of an OpOverload, or None when PyTorch documents it as
    deterministic (or does not list it)."""
    try:
        return BY_NAME.get(func._schema.name)
    except AttributeError:
        return None
