"""PyTorch allocating under the CUPTI collector, with its own snapshot of the same run."""
import sys

import torch

torch.cuda.memory._record_memory_history(max_entries=100000)
xs = [torch.empty(n << 20, dtype=torch.uint8, device="cuda") for n in (1, 3, 30, 100)]
y = torch.randn(1024, 1024, device="cuda") @ torch.randn(1024, 1024, device="cuda")
del xs[1]
torch.cuda.synchronize()
stats = torch.cuda.memory_stats()
print("reserved", torch.cuda.memory_reserved())
print("peak_allocated", stats["allocated_bytes.all.peak"])
torch.cuda.memory._dump_snapshot(sys.argv[1])
