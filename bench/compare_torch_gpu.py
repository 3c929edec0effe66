#!/usr/bin/env python3
"""bench_gpu beside PyTorch's CUDA build on the same shapes, in one run.

    python3 bench/compare_torch_gpu.py build-gpu/bench/bench_gpu [rounds]

Alternates memlens and PyTorch `rounds` times (default 3) and prints one JSON object: per
case the median microseconds of each, their ratio (memlens / PyTorch time; below 1 is
faster), whether it meets issue 20's target (PyTorch's throughput times 0.8 for
elementwise, reduction and copy, 0.9 for matmul), and the allocator pair against
cudaMalloc/cudaFree. Each PyTorch iteration waits for the GPU, as bench_gpu's do. Needs
a GPU and `python3 -c "import torch"`; PyTorch is never a build or test dependency.
"""
import json
import statistics
import subprocess
import sys
import time

try:
    import torch
except ImportError:
    sys.exit("compare_torch_gpu.py: PyTorch is not importable here")
if not torch.cuda.is_available():
    sys.exit("compare_torch_gpu.py: PyTorch sees no GPU")

# Throughput targets as a bound on the time ratio: 0.8x the throughput is 1/0.8 the time.
TARGETS = {"BM_Matmul": 1 / 0.9, "BM_BroadcastAdd": 1 / 0.8, "BM_Add": 1 / 0.8, "BM_SumDim": 1 / 0.8,
           "BM_Contiguous": 1 / 0.8}


def torch_cases():
    torch.manual_seed(0)
    dev = "cuda"
    a32, b32 = torch.rand(4096, 4096, device=dev), torch.rand(4096, 4096, device=dev)
    a16, b16 = a32.bfloat16(), b32.bfloat16()
    big, row, big2 = (torch.rand(8192, 8192, device=dev), torch.rand(8192, device=dev),
                      torch.rand(8192, 8192, device=dev))
    bt = torch.rand(8192, 8192, device=dev).t()
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    crit = torch.nn.CrossEntropyLoss()
    x, y = torch.randn(256, 784, device=dev), torch.randint(0, 10, (256,), device=dev)

    def step():
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        return loss

    def pair():
        t = torch.empty(1 << 20, dtype=torch.uint8, device=dev)
        del t

    # Default cuBLAS math for float32 (no TF32), as memlens runs it.
    torch.backends.cuda.matmul.allow_tf32 = False
    return {
        "BM_Matmul/4096/1": (lambda: a32 @ b32, 20),
        "BM_Matmul/4096/2": (lambda: a16 @ b16, 50),
        "BM_BroadcastAdd": (lambda: big + row, 50),
        "BM_Add": (lambda: big + big2, 50),
        "BM_SumDim/0": (lambda: big.sum(0), 50),
        "BM_SumDim/1": (lambda: big.sum(1), 50),
        "BM_Contiguous": (lambda: bt.contiguous(), 50),
        "BM_MlpStep": (step, 200),
        "torch_alloc_free_pair": (pair, 20000),
    }


def run_torch(cases):
    out = {}
    for name, (f, n) in cases.items():
        f()
        torch.cuda.synchronize()
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            for _ in range(n):
                f()
                if name != "torch_alloc_free_pair":
                    torch.cuda.synchronize()
            best = min(best, (time.perf_counter() - start) / n)
        out[name] = best * 1e6
    return out


def run_memlens(binary):
    out = subprocess.run([binary, "--benchmark_format=json", "--benchmark_min_time=0.2"], check=True,
                         capture_output=True, text=True).stdout
    result = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("error_occurred"):
            sys.exit(f"compare_torch_gpu.py: {b['name']}: {b.get('error_message')}")
        scale = {"ns": 1e-3, "us": 1, "ms": 1e3, "s": 1e6}[b.get("time_unit", "ns")]
        name = b["name"].removesuffix("/real_time")
        result[name] = b["real_time"] * scale
    return result


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary, rounds = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3
    cases = torch_cases()
    ours, theirs = {}, {}
    for _ in range(rounds):
        for name, v in run_memlens(binary).items():
            ours.setdefault(name, []).append(v)
        for name, v in run_torch(cases).items():
            theirs.setdefault(name, []).append(v)
    report = {"torch_version": torch.__version__, "gpu": torch.cuda.get_device_name(), "rounds": rounds, "cases": {}}
    for name in cases:
        if name not in ours:
            continue
        mo, to = statistics.median(ours[name]), statistics.median(theirs[name])
        case = {"memlens_us": round(mo, 2), "torch_us": round(to, 2), "ratio": round(mo / to, 3)}
        bound = TARGETS.get(name.split("/")[0])
        if bound:
            case["target_met"] = mo / to <= bound
        report["cases"][name] = case
    pair, raw = statistics.median(ours["BM_AllocFreePair"]), statistics.median(ours["BM_CudaMallocFreePair"])
    report["allocator_pair_us"] = {"memlens": round(pair, 3), "cudaMalloc_cudaFree": round(raw, 3),
                                   "torch_empty_del": round(statistics.median(theirs["torch_alloc_free_pair"]), 3)}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
