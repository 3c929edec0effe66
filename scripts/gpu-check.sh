#!/bin/bash
# The prepared check for a lent GPU machine (an H200 with PyTorch): one script, under 8
# minutes, run from the repository root. It builds with CUDA (-j16), runs the [gpu]
# tests, every sample on cuda under `memlens record` with its report, the CUPTI
# collector on a plain CUDA program and on a PyTorch script (against
# torch.cuda.memory_reserved()), the collector beside the runtime's own recorder on one
# sample, memlens' report on a PyTorch snapshot against memory_stats(), and the
# benchmarks beside PyTorch. Figures go to ${OUT:-/tmp}/gpu-check.txt, logs beside it.
# Exit status: 0 when every check passed.
set -u
cd "$(dirname "$0")/.."
out="${OUT:-/tmp}"
summary="$out/gpu-check.txt"
status=0
t0=$(date +%s)
say() { echo "$*" | tee -a "$summary"; }
check() { if "$@"; then say "PASS: $*"; else say "FAIL: $*"; status=1; fi; }
elapsed() { echo "$(( $(date +%s) - t0 )) s"; }
: > "$summary"
say "memlens gpu-check, $(date -u +%FT%TZ), $(git rev-parse --short HEAD 2>/dev/null), $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -1)"
say "PyTorch: $(python3 -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>&1 | tail -1)"

# ---- build
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DMEMLENS_CUDA=ON -DMEMLENS_VIEWER=OFF -DMEMLENS_CHECK_BUILDS=OFF \
  > "$out/configure.log" 2>&1 && cmake --build build-gpu -j16 > "$out/build.log" 2>&1
check test -x build-gpu/cli/memlens
check test -f build-gpu/profiler/cupti/libmemlens_cupti.so
say "built at $(elapsed)"
bin=build-gpu/cli/memlens

# ---- [gpu] tests: here none may skip.
timeout 240 ctest --test-dir build-gpu -L gpu -LE bench --output-on-failure -j8 > "$out/gpu-tests.log" 2>&1
say "gpu tests: $(grep -E 'tests passed|tests failed' "$out/gpu-tests.log" | tail -1)"
check grep -q "100% tests passed" "$out/gpu-tests.log"
check test "$(grep -c '(Skipped)' "$out/gpu-tests.log")" = 0
timeout 60 build-gpu/tests/runtime_tests "[gpu]" > "$out/runtime-gpu.log" 2>&1
check grep -q "All tests passed" "$out/runtime-gpu.log"
check timeout 60 build-gpu/tests/cupti_tests
say "gpu tests done at $(elapsed)"

# ---- every sample on cuda, recorded and reported
mkdir -p "$out/samples"
for s in linear_regression linear_regression_fixed leak_loss_history mlp_classifier transfer_in_loop buffer_reuse \
         contiguity broadcast_truth inplace_autograd oom_recovery gpt_tiny cnn_classifier; do
  trace="$out/samples/$s.memtrace"
  if timeout 60 "$bin" record --device cuda -o "$trace" -- build-gpu/samples/$s > "$out/samples/$s.log" 2>&1 &&
     "$bin" report --format json "$trace" > "$out/samples/$s.json" 2> "$out/samples/$s.err"; then
    python3 - "$out/samples/$s.json" "$s" >> "$summary" <<'PY' || status=1
import json, sys
t = json.load(open(sys.argv[1]))["traces"][0]
gpu = [d for d in t["devices"] if d["name"].startswith("cuda:")]
if not gpu:
    print(f"FAIL: sample {sys.argv[2]}: no cuda device in its trace"); sys.exit(1)
d = gpu[0]
print(f"PASS: sample {sys.argv[2]} on {d['name']}: peak allocated {d['peak_allocated']['allocated']} B, "
      f"{d['allocs']} allocs, {d['ooms']} OOMs, findings {[f['kind'] for f in t['findings']]}")
PY
  else
    say "FAIL: sample $s (see $out/samples/$s.log, $s.err)"; status=1
  fi
done
say "samples done at $(elapsed)"

# ---- the CUPTI collector on a plain CUDA program: 7 MiB in three cudaMalloc, all freed.
"$bin" record --cupti -o "$out/plain.memtrace" -- build-gpu/tests/plain_cuda > "$out/plain.log" 2>&1
"$bin" report --format json "$out/plain.memtrace" > "$out/plain.json"
python3 - "$out/plain.json" >> "$summary" <<'PY' || status=1
import json, sys
t = json.load(open(sys.argv[1]))["traces"][0]
d = [x for x in t["devices"] if x["name"].startswith("cuda:")][0]
ok = d["peak_reserved"]["reserved"] == 7340032 and d["segment_allocs"] == 3
print(f"{'PASS' if ok else 'FAIL'}: plain_cuda under CUPTI: peak reserved {d['peak_reserved']['reserved']} B "
      f"(want 7340032), segments {d['segment_allocs']} (want 3)")
sys.exit(0 if ok else 1)
PY

# ---- PyTorch under the collector, and its own snapshot of the same run.
cat > "$out/torch_alloc.py" <<'PY'
import sys, torch
torch.cuda.memory._record_memory_history(max_entries=100000)
xs = [torch.empty(n << 20, dtype=torch.uint8, device="cuda") for n in (1, 3, 30, 100)]
y = torch.randn(1024, 1024, device="cuda") @ torch.randn(1024, 1024, device="cuda")
del xs[1]
torch.cuda.synchronize()
stats = torch.cuda.memory_stats()
print("reserved", torch.cuda.memory_reserved())
print("peak_allocated", stats["allocated_bytes.all.peak"])
torch.cuda.memory._dump_snapshot(sys.argv[1])
PY
"$bin" record --cupti -o "$out/torch.memtrace" -- python3 "$out/torch_alloc.py" "$out/torch_snapshot.pickle" \
  > "$out/torch.log" 2>&1
"$bin" report --format json "$out/torch.memtrace" > "$out/torch.json"
"$bin" report --format json "$out/torch_snapshot.pickle" > "$out/torch_snapshot.json"
python3 - "$out/torch.json" "$out/torch.log" "$out/torch_snapshot.json" >> "$summary" <<'PY' || status=1
import json, re, sys
log = open(sys.argv[2]).read()
want_reserved = int(re.search(r"reserved (\d+)", log).group(1))
want_peak = int(re.search(r"peak_allocated (\d+)", log).group(1))
t = json.load(open(sys.argv[1]))["traces"][0]
cuda = [x for x in t["devices"] if x["name"].startswith("cuda:")]
got = max(x["peak_reserved"]["reserved"] for x in cuda)
ok = True
# The collector sees every cudaMalloc: PyTorch's segments plus cuBLAS' workspace, if any.
print(f"{'PASS' if got >= want_reserved else 'FAIL'}: torch under CUPTI: peak reserved {got} B, "
      f"torch.cuda.memory_reserved() {want_reserved} B, difference {got - want_reserved} B (cuBLAS workspace etc.)")
ok &= got >= want_reserved
s = json.load(open(sys.argv[3]))["traces"][0]
peak = max(x["peak_allocated"]["allocated"] for x in s["devices"] if x["name"].startswith("cuda:"))
print(f"{'PASS' if peak == want_peak else 'FAIL'}: torch snapshot report: peak allocated {peak} B, "
      f"memory_stats() allocated_bytes.all.peak {want_peak} B")
ok &= peak == want_peak
sys.exit(0 if ok else 1)
PY

# ---- the collector beside the runtime's own recorder on one sample: CUPTI's segments
# must be the allocator's segment events (and whatever else called cudaMalloc, listed).
MEMLENS_DEVICE=cuda MEMLENS_TRACE="$out/both-runtime.memtrace" MEMLENS_CUPTI_TRACE="$out/both-cupti.memtrace" \
  CUDA_INJECTION64_PATH="$PWD/build-gpu/profiler/cupti/libmemlens_cupti.so" \
  timeout 60 build-gpu/samples/mlp_classifier > "$out/both.log" 2>&1
"$bin" export --json "$out/both-runtime.jsonl" "$out/both-runtime.memtrace" > /dev/null
"$bin" export --json "$out/both-cupti.jsonl" "$out/both-cupti.memtrace" > /dev/null
python3 - "$out/both-runtime.jsonl" "$out/both-cupti.jsonl" >> "$summary" <<'PY' || status=1
import json, sys
def segments(path):
    out = set()
    for line in open(path):
        e = json.loads(line)
        if e.get("kind") == "segment_alloc" and str(e.get("device", "")).startswith("cuda:"):
            out.add((e["address"], e["size"]))
    return out
ours, cupti = segments(sys.argv[1]), segments(sys.argv[2])
missing, extra = ours - cupti, cupti - ours
ok = bool(ours) and not missing
print(f"{'PASS' if ok else 'FAIL'}: mlp_classifier, recorder and CUPTI side by side: {len(ours)} allocator segments, "
      f"{len(cupti)} CUPTI segments, {len(missing)} of ours unseen by CUPTI, "
      f"{len(extra)} cudaMallocs outside the allocator ({sum(s for _, s in extra)} B)")
sys.exit(0 if ok else 1)
PY
say "collector checks done at $(elapsed)"

# ---- benchmarks beside PyTorch, in one run
timeout 150 python3 bench/compare_torch_gpu.py build-gpu/bench/bench_gpu 3 > "$out/compare_torch_gpu.json" \
  2> "$out/compare_torch_gpu.err"
check test -s "$out/compare_torch_gpu.json"
cat "$out/compare_torch_gpu.json" >> "$summary"
say "benchmarks done at $(elapsed)"

# ---- the whole suite with a GPU present (what CI runs without one), in what time is left
timeout 120 ctest --test-dir build-gpu -LE "gpu|bench" -j16 > "$out/ctest-all.log" 2>&1
say "whole suite on the GPU machine: $(grep -E 'tests passed|tests failed' "$out/ctest-all.log" | tail -1)"
grep -E "\(Failed\)|\(Timeout\)|\*\*\*" "$out/ctest-all.log" | head -20 >> "$summary"

say "status $status, $(elapsed)"
exit $status
