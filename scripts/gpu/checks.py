#!/usr/bin/env python3
"""The GPU check's verdicts on what memlens wrote, one PASS or FAIL line each.

    checks.py sample REPORT.json NAME
    checks.py plain REPORT.json
    checks.py torch CUPTI_REPORT.json TORCH_LOG SNAPSHOT_REPORT.json
    checks.py side-by-side RUNTIME.jsonl CUPTI.jsonl

Exits 1 when the verdict is FAIL.
"""
import json
import re
import sys


def trace(path):
    return json.load(open(path))["traces"][0]


def cuda_devices(t):
    return [d for d in t["devices"] if d["name"].startswith("cuda:")]


def sample(report, name):
    t = trace(report)
    gpu = cuda_devices(t)
    if not gpu:
        print(f"FAIL: sample {name}: no cuda device in its trace")
        return False
    d = gpu[0]
    print(f"PASS: sample {name} on {d['name']}: peak allocated {d['peak_allocated']['allocated']} B, "
          f"{d['allocs']} allocs, {d['ooms']} OOMs, findings {[f['kind'] for f in t['findings']]}")
    return True


def plain(report):
    # plain_cuda: 7 MiB in three cudaMalloc, all freed.
    d = cuda_devices(trace(report))[0]
    ok = d["peak_reserved"]["reserved"] == 7340032 and d["segment_allocs"] == 3
    print(f"{'PASS' if ok else 'FAIL'}: plain_cuda under CUPTI: peak reserved {d['peak_reserved']['reserved']} B "
          f"(want 7340032), segments {d['segment_allocs']} (want 3)")
    return ok


def torch_run(cupti_report, log, snapshot_report):
    text = open(log).read()
    want_reserved = int(re.search(r"reserved (\d+)", text).group(1))
    want_peak = int(re.search(r"peak_allocated (\d+)", text).group(1))
    got = max(d["peak_reserved"]["reserved"] for d in cuda_devices(trace(cupti_report)))
    # The collector sees every cudaMalloc: PyTorch's segments plus cuBLAS' workspace, if any.
    ok = got >= want_reserved
    print(f"{'PASS' if ok else 'FAIL'}: torch under CUPTI: peak reserved {got} B, torch.cuda.memory_reserved() "
          f"{want_reserved} B, difference {got - want_reserved} B (cuBLAS workspace etc.)")
    peak = max(d["peak_allocated"]["allocated"] for d in cuda_devices(trace(snapshot_report)))
    same = peak == want_peak
    print(f"{'PASS' if same else 'FAIL'}: torch snapshot report: peak allocated {peak} B, memory_stats() "
          f"allocated_bytes.all.peak {want_peak} B")
    return ok and same


def side_by_side(runtime, cupti):
    # CUPTI's segments must be the allocator's segment events (and whatever else called
    # cudaMalloc, listed).
    def segments(path):
        out = set()
        for line in open(path):
            e = json.loads(line)
            if e.get("kind") == "segment_alloc" and str(e.get("device", "")).startswith("cuda:"):
                out.add((e["address"], e["size"]))
        return out
    ours, theirs = segments(runtime), segments(cupti)
    missing, extra = ours - theirs, theirs - ours
    ok = bool(ours) and not missing
    print(f"{'PASS' if ok else 'FAIL'}: mlp_classifier, recorder and CUPTI side by side: {len(ours)} allocator "
          f"segments, {len(theirs)} CUPTI segments, {len(missing)} of ours unseen by CUPTI, {len(extra)} cudaMallocs "
          f"outside the allocator ({sum(s for _, s in extra)} B)")
    return ok


CHECKS = {"sample": sample, "plain": plain, "torch": torch_run, "side-by-side": side_by_side}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in CHECKS:
        sys.exit(__doc__)
    try:
        passed = CHECKS[sys.argv[1]](*sys.argv[2:])
    except Exception as e:  # a missing or unreadable file is a failed check, said in one line
        print(f"FAIL: {sys.argv[1]}: {type(e).__name__}: {e}")
        passed = False
    sys.exit(0 if passed else 1)
