"""Every aten op, below autograd, as the trace's events (PyTorch's TorchDispatchMode sees
each one, views and the backward pass's included).

What an op becomes, in the runtime's own vocabulary, so each analysis reads a PyTorch
run as it reads one of memlens' runtime:
- a view (its output lives on an input's storage): a View event of its kind;
- a copy that makes its own output: `clone` (for layout when it asks for a contiguous
  copy of a non-contiguous input, as `contiguous()` and a `reshape` that copies do),
  `_to_copy` (another device: a transfer; another dtype: a cast): a Copy event with its
  reason; `copy_` into an existing tensor: a Copy of reason copy_;
- a factory (`empty`, `zeros`, `full`, ...) and a fill: its storage only, no Op (a buffer,
  not a computed value: what the churn report looks for);
- anything else: an Op with its output's and inputs' shapes, flagged when an elementwise
  op's output is larger than every input (a broadcast).
New storages are born at the op's site, whatever kind it is.
"""
import re

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ._abi import dims_array
from ._vocabulary import COPY_REASON, SCALAR_TYPE, VIEW_KIND

_VIEW_KINDS = {
    "_reshape_alias": "reshape", "reshape": "reshape", "t": "transpose", "transpose": "transpose",
    "swapaxes": "transpose", "swapdims": "transpose", "numpy_T": "transpose", "mT": "transpose", "permute": "permute",
    "movedim": "permute", "expand": "expand", "expand_as": "expand", "broadcast_to": "expand", "squeeze": "squeeze",
    "unsqueeze": "unsqueeze", "narrow": "narrow", "select": "select", "unbind": "select", "slice": "slice",
    "split": "slice", "split_with_sizes": "slice", "chunk": "slice", "tensor_split": "slice", "diagonal": "diagonal",
    "detach": "detach",
}
# Buffers: only their storage, no op (made empty or refilled, they hold no value of their own).
_FACTORIES = {
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "lift_fresh", "fill_", "zero_", "fill",
    "resize_",
}
# Constants: ops of no inputs (a `_like`'s tensor gives only its shape), so the same mask or
# table made every step can be told from a buffer filled with the step's data.
_CONSTANTS = {
    "zeros", "zeros_like", "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full", "scalar_tensor",
}
# Elementwise ops, for PyTorch before tags (1.13); later ones say so with torch.Tag.pointwise.
_ELEMENTWISE = {
    "add", "sub", "rsub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow", "float_power",
    "maximum", "minimum", "fmax", "fmin", "atan2", "hypot", "copysign", "xlogy", "where", "eq", "ne", "lt", "le", "gt",
    "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "addcmul", "addcdiv",
    "lerp", "clamp", "clamp_min", "clamp_max", "masked_fill", "threshold_backward", "sigmoid_backward",
    "tanh_backward", "gelu_backward", "silu_backward", "mse_loss_backward",
}
_REALLOCATING = {"set_", "resize_", "resize_as_", "_resize_output_"}
_DETACH = torch.ops.aten.detach.default
# What PyTorch's allocators say when memory runs out: CUDA's caching allocator ("CUDA out
# of memory. Tried to allocate 20.00 GiB"), the CPU's ("you tried to allocate 80 bytes").
_OUT_OF_MEMORY = re.compile(r"out of memory|can't allocate memory", re.IGNORECASE)
_REQUESTED = re.compile(r"[Tt]ried to allocate (\d+(?:\.\d+)?) ?(bytes|B|KiB|MiB|GiB|TiB)")
_UNIT = {"bytes": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
_POINTWISE_TAG = getattr(getattr(torch, "Tag", None), "pointwise", None)
# The trace's dtypes by torch.dtype; the others (int8, complex, ...) are recorded as float32.
_DTYPE = {getattr(torch, name.split(".")[1]): number for name, number in SCALAR_TYPE.items()}
_FLOAT32 = SCALAR_TYPE["torch.float32"]


def _flat_tensors(values):
    out = []
    for v in values:
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out.extend(t for t in v if isinstance(t, torch.Tensor))
    return out


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


class _Classes:
    """What each op is, worked out once per overload."""

    def __init__(self):
        self._by_op = {}

    def of(self, func):
        known = self._by_op.get(func)
        if known is None:
            name = func.overloadpacket.__name__
            tags = getattr(func, "tags", ())
            pointwise = (_POINTWISE_TAG in tags) if _POINTWISE_TAG is not None else name.rstrip("_") in _ELEMENTWISE
            known = self._by_op[func] = (name, pointwise, name.endswith("_"))
        return known


class DispatchRecorder(TorchDispatchMode):
    def __init__(self, recording):
        super().__init__()
        self._r = recording
        self._classes = _Classes()
        self._names = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        r = self._r
        start = r.abi.memlens_abi_now_ns()
        try:
            out = func(*args, **kwargs)
        except RuntimeError as e:  # torch.cuda.OutOfMemoryError is one too
            if r.active and not r.quiet and _OUT_OF_MEMORY.search(str(e)):
                r.guarded(self._out_of_memory, args, kwargs, str(e))
            raise
        if func is _DETACH and not isinstance(out, torch.Tensor):
            # A "wrapped number" (`x / 2.0`'s 2.0) comes back from the op as a Python
            # number (PyTorch 1.13, when autograd saves it for a hook): it has no history
            # to cut, so it is its own detached self.
            out = args[0]
        if r.active and not r.quiet:
            r.guarded(self._record, func, args, kwargs, out, start)
        return out

    def _out_of_memory(self, args, kwargs, message):
        device = kwargs.get("device")
        for t in _flat_tensors(args):
            device = t.device
            break
        device = torch.device(device) if device is not None else torch.device("cpu")
        number = self._r.storages.device_number_of(device)
        requested = _REQUESTED.search(message)
        nbytes = int(float(requested.group(1)) * _UNIT[requested.group(2)]) if requested else 0
        self._r.out_of_memory(number if number is not None else 0, nbytes)

    def _name_id(self, name):
        nid = self._names.get(name)
        if nid is None:
            nid = self._names[name] = self._r.abi.memlens_abi_string(name.encode())
        return nid

    def _record(self, func, args, kwargs, out, start):
        r = self._r
        storages = r.storages
        storages.poll()
        site, stack = r.sites.current()
        name, pointwise, inplace = self._classes.of(func)
        inputs = _flat_tensors(args)
        input_records = {}
        backward_sites = r.backward_sites
        storage_ids = {}  # tensor object -> its storage's id, for the op's record
        for t in inputs:
            backward_sites.used(t)
            record = storages.held(t)
            if record is None:  # an object not seen before: what is it?
                record, _ = storages.see(t, site, stack, r.category_for_unseen(t))
                if record is not None:
                    r.note_input(t, record)
            if record is not None:
                input_records[record.address] = record
                storage_ids[id(t)] = record.id
        outputs = _flat_tensors(out if isinstance(out, (list, tuple)) else (out,))
        # These may give a tensor object other memory than it had.
        fresh = name in _REALLOCATING or "out" in kwargs
        born = []
        views = []
        for t in outputs:
            record, new = storages.see(t, site, stack, r.category_for_new(), fresh)
            if record is None:
                continue
            storage_ids[id(t)] = record.id
            backward_sites.made(t, (site, stack))
            if new:
                born.append((t, record))
            elif not inplace and record.address in input_records:
                views.append((t, record))
        abi = r.abi
        if name == "copy_" and inputs and len(inputs) >= 2:
            dst, src = inputs[0], inputs[1]
            abi.memlens_abi_copy(storages.device_number(dst), dst.data_ptr(), storages.device_number(src),
                                 src.data_ptr(), dst.numel() * dst.element_size(), COPY_REASON["copy_"], site)
            return
        if name in _FACTORIES:
            return
        for t, record in views:
            kind = VIEW_KIND[_VIEW_KINDS.get(name, "view")]
            sizes, strides = list(t.shape), list(t.stride())
            abi.memlens_abi_view(record.device, id(t), record.id, t.storage_offset(), kind, _DTYPE.get(t.dtype, _FLOAT32),
                                 site, dims_array([len(sizes)] + sizes + strides))
        if views and not born:
            return
        reason = self._copy_reason(name, inputs, outputs, kwargs)
        if reason is not None:
            if born:  # a copy of no bytes makes no storage
                src, (dst, record) = inputs[0], born[0]
                abi.memlens_abi_copy(record.device, dst.data_ptr(), storages.device_number(src), src.data_ptr(),
                                     dst.numel() * dst.element_size(), COPY_REASON[reason], site)
            return
        if not outputs:
            return
        if name in _CONSTANTS:
            inputs = ()
        result = outputs[0]
        tensors = []
        device_number = storages.device_number
        largest = 0
        for t in (result, *inputs[:4]):
            shape = t.shape
            tensors += (len(shape), _DTYPE.get(t.dtype, _FLOAT32), device_number(t), storage_ids.get(id(t), 0),
                        t.storage_offset(), *shape, *t.stride())
            if t is not result:
                largest = max(largest, _numel(shape))
        broadcast = pointwise and bool(inputs) and _numel(result.shape) > largest
        abi.memlens_abi_op(self._name_id(name), site, start, result.numel() * result.element_size(), int(broadcast),
                           min(len(inputs), 4), dims_array(tensors))

    @staticmethod
    def _copy_reason(name, inputs, outputs, kwargs):
        if not inputs or not outputs:
            return None
        src, dst = inputs[0], outputs[0]
        if name == "clone":
            layout = kwargs.get("memory_format") == torch.contiguous_format and not src.is_contiguous()
            return "contiguous" if layout else "clone"
        if name == "_to_copy":
            return "to_device" if src.device != dst.device else "cast" if src.dtype != dst.dtype else "clone"
        return None
