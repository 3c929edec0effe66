# Data-parallel training on the CPU: two processes (torchrun --nproc_per_node 2), the gloo
# backend, a small MLP wrapped in DistributedDataParallel. Each rank prints what it holds in
# parameters, so the test can check each rank's trace against its own process.
import datetime
import faulthandler

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def main():
    faulthandler.dump_traceback_later(90, exit=True)  # a test must not hang: say where it stuck
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(5):
        x, y = torch.randn(16, 32), torch.randn(16, 4)
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    parameter_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    print(f"rank {rank} of {dist.get_world_size()}: parameters {parameter_bytes} bytes", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
