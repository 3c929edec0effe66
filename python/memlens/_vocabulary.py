"""The trace's enums by name, in the trace's order (memlens/common/event_kinds.hpp,
scalar_type.hpp's dtype_repr): the numbers the C ABI takes. A test holds these lists to the C++ ones."""

CATEGORIES = ["unknown", "parameter", "gradient", "optimizer_state", "activation", "temporary", "input", "autograd_detail",
              "before_recording"]
VIEW_KINDS = ["view", "reshape", "transpose", "permute", "expand", "squeeze", "unsqueeze", "narrow", "select", "slice",
              "diagonal", "detach", "index"]
COPY_REASONS = ["to_device", "contiguous", "reshape", "clone", "copy_", "index", "op_internal", "cast"]
SCALAR_TYPES = ["torch.bool", "torch.int64", "torch.float32", "torch.float64", "torch.uint8", "torch.int32", "torch.float16",
                "torch.bfloat16"]

CATEGORY = {name: i for i, name in enumerate(CATEGORIES)}
VIEW_KIND = {name: i for i, name in enumerate(VIEW_KINDS)}
COPY_REASON = {name: i for i, name in enumerate(COPY_REASONS)}
SCALAR_TYPE = {name: i for i, name in enumerate(SCALAR_TYPES)}
