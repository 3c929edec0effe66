#!/bin/sh
# The prepared check for a lent GPU machine (an H200 with PyTorch): one script, under 8
# minutes. Builds with CUDA, runs the [gpu] tests, runs the CUPTI collector on a plain
# CUDA program and on a PyTorch script, and writes a summary of figures to
# ${OUT:-/tmp}/gpu-check.txt. Exit status: 0 when every check passed.
set -u
cd "$(dirname "$0")/.."
out="${OUT:-/tmp}"
summary="$out/gpu-check.txt"
status=0
say() { echo "$*" | tee -a "$summary"; }
check() { if "$@"; then say "PASS: $*"; else say "FAIL: $*"; status=1; fi; }
: > "$summary"
say "memlens gpu-check, $(date -u +%FT%TZ), $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>&1 | head -1)"

cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DMEMLENS_CUDA=ON -DMEMLENS_VIEWER=OFF > "$out/configure.log" 2>&1 &&
  cmake --build build-gpu -j"$(nproc)" > "$out/build.log" 2>&1
check test -x build-gpu/cli/memlens
check test -f build-gpu/profiler/cupti/libmemlens_cupti.so

# [gpu] tests: they skip with a reason where there is no GPU; here they must run.
build-gpu/tests/runtime_tests "[gpu]" > "$out/gpu-tests.log" 2>&1
check grep -q "All tests passed" "$out/gpu-tests.log"
check build-gpu/tests/cupti_tests

# The collector on a plain CUDA program: 7 MiB in three cudaMalloc, all freed.
build-gpu/cli/memlens record --cupti -o "$out/plain.memtrace" -- build-gpu/tests/plain_cuda > "$out/plain.log" 2>&1
build-gpu/cli/memlens report --format json "$out/plain.memtrace" > "$out/plain.json"
python3 - "$out/plain.json" >> "$summary" <<'PY' || status=1
import json, sys
t = json.load(open(sys.argv[1]))["traces"][0]
d = [x for x in t["devices"] if x["name"].startswith("cuda:")][0]
print(f"plain_cuda: peak reserved {d['peak_reserved']['reserved']} B (want 7340032), segments {d['segment_allocs']}")
sys.exit(0 if d["peak_reserved"]["reserved"] == 7340032 and d["segment_allocs"] == 3 else 1)
PY

# The collector on PyTorch: its reserved bytes against torch.cuda.memory_reserved().
cat > "$out/torch_alloc.py" <<'PY'
import torch
xs = [torch.empty(n << 20, dtype=torch.uint8, device="cuda") for n in (1, 3, 30, 100)]
torch.cuda.synchronize()
print("reserved", torch.cuda.memory_reserved())
del xs
PY
build-gpu/cli/memlens record --cupti -o "$out/torch.memtrace" -- python3 "$out/torch_alloc.py" > "$out/torch.log" 2>&1
build-gpu/cli/memlens report --format json "$out/torch.memtrace" > "$out/torch.json"
python3 - "$out/torch.json" "$out/torch.log" >> "$summary" <<'PY' || status=1
import json, re, sys
t = json.load(open(sys.argv[1]))["traces"][0]
want = int(re.search(r"reserved (\d+)", open(sys.argv[2]).read()).group(1))
got = max(x["peak_reserved"]["reserved"] for x in t["devices"] if x["name"].startswith("cuda:"))
print(f"torch: collector peak reserved {got} B, torch.cuda.memory_reserved() {want} B")
sys.exit(0 if got >= want else 1)
PY

say "status $status"
exit $status
