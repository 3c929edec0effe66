# Ops whose tensors are not all contiguous float32 on one device: what PyTorch itself says
# of each op's output and inputs (sizes, strides, dtype, offset, and the address its
# storage starts at) goes to the file in argv[1], for the test to hold the trace's op
# events to.
import json
import sys

import torch

weights = torch.arange(12.0).reshape(3, 4)
ones = torch.ones(3, 2)
product = torch.mm(weights.t(), ones)  # the first input is transposed: strides (1, 4)
every_other = torch.arange(6).view(2, 3)[:, 1::2]  # int64, strides (3, 2), offset 1
counts = every_other * 3
square = torch.ones(2, 2, dtype=torch.float64)
wide = square + square.t()  # both inputs on one storage


def described(t):
    return {"sizes": list(t.shape), "strides": list(t.stride()), "dtype": str(t.dtype), "device": str(t.device),
            "offset": t.storage_offset(), "base": t.data_ptr() - t.storage_offset() * t.element_size()}


def op(name, output, *inputs):
    return {"name": name, "output": described(output), "inputs": [described(t) for t in inputs]}


with open(sys.argv[1], "w") as out:
    json.dump([op("mm", product, weights.t(), ones), op("mul", counts, every_other), op("add", wide, square, square.t())],
              out)
