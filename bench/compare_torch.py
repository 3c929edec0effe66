#!/usr/bin/env python3
"""bench_ops beside PyTorch's CPU build on the same shapes, one thread each, in one run.

    OPENBLAS_NUM_THREADS=1 python3 bench/compare_torch.py build-release/bench/bench_ops [rounds]

Alternates memlens and PyTorch `rounds` times (default 3) and prints one JSON object:
per case the median nanoseconds of each and their ratio (memlens / PyTorch; below 1 is
faster), plus the MLP step's allocations per step (PyTorch's counted by its profiler). Needs `python3 -c "import torch"`
(Debian's python3-torch); PyTorch is never a build or test dependency.
"""
import json
import os
import statistics
import subprocess
import sys
import timeit

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
try:
    import torch
except ImportError:
    sys.exit("compare_torch.py: PyTorch is not importable here (apt-get install python3-torch)")
torch.set_num_threads(1)


def torch_allocations(step):
    """Allocations one call of `step` makes, from PyTorch's profiler (profile_memory)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as p:
        step()
    return sum(1 for e in p.profiler.kineto_results.events() if e.name() == "[memory]" and e.nbytes() > 0)


def torch_cases():
    torch.manual_seed(0)
    a512, b512 = torch.rand(512, 512), torch.rand(512, 512)
    a, row, c = torch.rand(1000, 1000), torch.rand(1000), torch.rand(1000, 1000)
    at = torch.rand(1000, 1000).t()
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    crit = torch.nn.CrossEntropyLoss()
    x, y = torch.randn(256, 784), torch.randint(0, 10, (256,))

    def step():
        opt.zero_grad()
        crit(model(x), y).backward()
        opt.step()

    step()
    torch_cases.allocations = torch_allocations(step)
    bf = torch.bfloat16
    a512h, b512h = a512.to(bf), b512.to(bf)
    xh, wh, bh = torch.randn(1024, 768).to(bf), torch.ones(768, dtype=bf), torch.zeros(768, dtype=bf)
    sh = torch.randn(1024, 1024).to(bf)
    return {
        "BM_MatmulBf16/512": (lambda: a512h @ b512h, 20),
        "BM_LayerNormBf16": (lambda: torch.nn.functional.layer_norm(xh, (768,), wh, bh), 50),
        "BM_SoftmaxBf16": (lambda: torch.softmax(sh, 1), 50),
        "BM_Matmul/512": (lambda: a512 @ b512, 50),
        "BM_BroadcastAdd": (lambda: a + row, 300),
        "BM_Add": (lambda: a + c, 300),
        "BM_SumDim/0": (lambda: a.sum(0), 300),
        "BM_SumDim/1": (lambda: a.sum(1), 300),
        "BM_Contiguous": (lambda: at.contiguous(), 300),
        "BM_MlpStep": (step, 50),
    }


def run_torch(cases):
    return {name: min(timeit.repeat(f, number=n, repeat=5)) / n * 1e9 for name, (f, n) in cases.items()}


def run_memlens(binary):
    out = subprocess.run([binary, "--benchmark_format=json", "--benchmark_min_time=0.3"], check=True,
                         capture_output=True, text=True).stdout
    result, allocations = {}, None
    for b in json.loads(out)["benchmarks"]:
        scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
        result[b["name"]] = b["real_time"] * scale
        if "allocations_per_step" in b:
            allocations = b["allocations_per_step"]
    return result, allocations


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary, rounds = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3
    cases = torch_cases()
    ours, theirs, allocations = {}, {}, None
    for _ in range(rounds):
        m, allocations = run_memlens(binary)
        t = run_torch(cases)
        for name in cases:
            ours.setdefault(name, []).append(m[name])
            theirs.setdefault(name, []).append(t[name])
    report = {"torch_version": torch.__version__, "rounds": rounds, "cases": {}}
    for name in cases:
        mo, to = statistics.median(ours[name]), statistics.median(theirs[name])
        report["cases"][name] = {"memlens_ns": round(mo), "torch_ns": round(to), "ratio": round(mo / to, 3)}
    report["mlp_allocations_per_step"] = {"memlens": allocations, "torch": torch_cases.allocations}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
