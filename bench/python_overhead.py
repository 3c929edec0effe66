#!/usr/bin/env python3
"""What recording a PyTorch program costs: training steps run plain and under
`memlens.record`, interleaved (plain, recorded, plain, ...) so the machine's drift hits
both alike; the median of each over ROUNDS rounds of STEPS steps.

    PYTHONPATH=python MEMLENS_RECORD_ABI=build/profiler/record_abi/libmemlens_record_abi.so \
        /usr/bin/python3 bench/python_overhead.py [--rounds 7] [--steps 20] [--json out.json]

Workloads (CPU): an MLP 784-256-10 at batch 256 (SGD), and one pre-norm transformer block
(d_model 128, 4 heads, sequence 64, batch 8, AdamW). Prints one JSON object: per workload
the plain and recorded medians (ms per step), their ratio, and the trace's bytes per step;
and, timed in the same rounds, the steps under a TorchDispatchMode that does nothing but
run each op: PyTorch's own cost of the mode, which any recorder built on it pays.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

try:
    import torch
    from torch import nn
    from torch.utils._python_dispatch import TorchDispatchMode
except ImportError as e:
    print("skipped: %s cannot import torch: %s" % (sys.executable, e))
    sys.exit(77)

import memlens  # noqa: E402 - after the check for torch


def mlp():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(256, 784), torch.randint(0, 10, (256,))

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def transformer_block():
    torch.manual_seed(0)
    d, heads, seq, batch = 128, 4, 64, 8

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
            q, k, v = (z.view(b, t, heads, d // heads).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) / (d // heads) ** 0.5
            att = att.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
            return x + self.mlp(self.norm2(x))

    model = Block()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(batch, seq, d)

    def step():
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()

    return step


class BareDispatchMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def timed(step, steps):
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) * 1000 / steps


def measure(name, make, rounds, steps, folder):
    step = make()
    for _ in range(3):
        step()  # warm up: caches, lazy init, optimizer state
    plain, bare, recorded, events = [], [], [], 0
    for r in range(rounds):
        plain.append(timed(step, steps))
        with BareDispatchMode():
            bare.append(timed(step, steps))
        path = os.path.join(folder, "%s-%d.memtrace" % (name, r))
        with memlens.record(path):
            recorded.append(timed(step, steps))
        events = os.path.getsize(path)
    p, b, q = statistics.median(plain), statistics.median(bare), statistics.median(recorded)
    return {"plain_ms_per_step": round(p, 3), "recorded_ms_per_step": round(q, 3), "ratio": round(q / p, 3),
            "dispatch_mode_ms_per_step": round(b, 3), "dispatch_mode_ratio": round(b / p, 3),
            "plain_ms": [round(v, 3) for v in plain], "recorded_ms": [round(v, 3) for v in recorded],
            "trace_bytes_per_step": events // steps}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--json", help="also write the result here")
    args = parser.parse_args()
    torch.set_num_threads(1)  # one core each, so the two timings share the machine alike
    out = {"torch": torch.__version__, "python": sys.version.split()[0], "rounds": args.rounds, "steps": args.steps,
           "threads": 1}
    with tempfile.TemporaryDirectory() as folder:
        for name, make in (("mlp_784_256_10_b256", mlp), ("transformer_block_d128", transformer_block)):
            out[name] = measure(name, make, args.rounds, args.steps, folder)
    text = json.dumps(out, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
