#!/bin/bash
# The GPU check's run step, inside the bundle (scripts/gpu-bundle.sh makes it): needs the
# bundle, the NVIDIA driver with the CUDA toolkit's libraries, and PyTorch for the
# PyTorch checks. Under six minutes: every command has its own timeout inside one overall
# deadline, one at a time (the OOM test alone: it fills the GPU). Logs go to a scratch
# folder; ${OUT:-./gpu-check-out} gets gpu-check.txt (the summary, printed at the end) and
# gpu-logs.tar.gz. Without a GPU every binary still starts and the GPU checks say why they
# skip. Exit status: 0 when no check failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$PWD/gpu-check-out}
mkdir -p "$out"
logs=$(mktemp -d)
summary="$out/gpu-check.txt"
: > "$summary"
status=0
deadline=$((SECONDS + 330))
# The CUDA libraries (cudart, cuBLAS, CUPTI): the toolkit's, else those PyTorch's wheels carry.
cuda_libs=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && cuda_libs="${cuda_libs:+$cuda_libs:}$d"
done
wheel_libs=$(timeout 60 python3 -c '
import glob, os
dirs = []
try:
    import nvidia
    for root in nvidia.__path__:
        dirs += glob.glob(os.path.join(root, "*", "lib")) + glob.glob(os.path.join(root, "*", "*", "lib"))
except Exception:
    pass
print(":".join(d for d in dirs if os.path.isdir(d)))' 2>/dev/null)
[ -n "$wheel_libs" ] && cuda_libs="${cuda_libs:+$cuda_libs:}$wheel_libs"
export LD_LIBRARY_PATH="$here/lib${cuda_libs:+:$cuda_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export MEMLENS_SIM_MEMORY=1GiB
unset MEMLENS_TRACE MEMLENS_DEVICE MEMLENS_CUPTI_TRACE
bin=$here/bin
say() { echo "$*" >> "$summary"; }
fail() { say "FAIL: $*"; status=1; }
# step NAME SECONDS COMMAND...: runs it into $logs/NAME.log within its time and what is
# left of the deadline; its exit status, 124 when out of time.
step() {
  local name=$1 limit=$2 left=$((deadline - SECONDS))
  shift 2
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -lt 3 ]; then echo "no time left" > "$logs/$name.log"; return 124; fi
  timeout -k 5 "$limit" "$@" > "$logs/$name.log" 2>&1
}
log() { cat "$logs/$1.log"; }

say "memlens gpu-check of $(cat "$here/share/commit"), $(date -u +%FT%TZ)"
say "GPU: $( (nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || echo "nvidia-smi fails or is missing") 2>/dev/null | head -1)"
torch_line=$(python3 -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda, "GPU available" if torch.cuda.is_available() else "sees no GPU")' 2>&1 | tail -1)
say "PyTorch: $torch_line"
has_torch=0
case $torch_line in *"GPU available") has_torch=1 ;; esac

# ---- every library resolves, every binary starts
missing=$(for f in "$bin"/* "$here"/lib/*.so; do ldd "$f" 2>&1 | sed -n "s|^\s*\(\S*\) => not found|$(basename "$f"): \1|p"; done)
if [ -n "$missing" ]; then fail "libraries not found: $(echo "$missing" | tr '\n' ' ')"; else say "PASS: every library of $(ls "$bin" | wc -l) binaries resolves"; fi
started=0
for f in "$bin"/*; do
  n=$(basename "$f")
  case $n in
    *_tests) args=(--list-tests) ;;
    memlens) args=(--version) ;;
    bench_gpu) args=(--benchmark_list_tests=true) ;;
    *) args=() ;;  # plain_cuda and the samples: a run (without a GPU they stop at once)
  esac
  # Only the loader's or timeout's own words say it did not start: exit codes cannot (Catch2's
  # --list-tests exits with the number of tests).
  step "start-$n" 60 env MEMLENS_DEVICE=cuda "$f" "${args[@]}"
  if grep -Eq "error while loading shared libraries|timeout: failed to run|env: .*: (No such file|Permission denied)" "$logs/start-$n.log"
  then fail "$n does not start: $(grep -E "error while loading|failed to run|env: " "$logs/start-$n.log" | head -1)"
  else started=$((started + 1)); fi
done
say "PASS: $started binaries started"

# ---- the gpu tests: here none may skip. The OOM test runs alone. Catch2's compact
# reporter: one line a message, then "Passed all N test cases ..." or "Failed ...".
totals() { grep -E "^(Passed all|Failed|No test cases)" "$logs/$1.log" | tail -1; }
catch() {  # catch NAME SECONDS PROGRAM FILTER: one verdict line
  local name=$1 limit=$2 prog=$3 filter=${4:-}
  step "$name" "$limit" "$bin/$prog" ${filter:+"$filter"} -r compact
  local rc=$? last label="$prog${filter:+ $filter}"
  last=$(totals "$name")
  if [ $rc -eq 0 ] && [[ $last == "Passed all"* ]]; then say "PASS: $label: $last"
  else fail "$label (exit $rc): $last"; fi
}
step gpu-tests 150 "$bin/gpu_tests" "~[oom]" -r compact
rc=$?
skipped=$(sed -n "s/.*'\(GPU test skipped: .*\)'$/\1/p" "$logs/gpu-tests.log" | head -1)
has_gpu=1
if [ -n "$skipped" ]; then
  has_gpu=0
  say "SKIP: gpu tests: $skipped ($(grep -c "GPU test skipped" "$logs/gpu-tests.log") cases)"
elif [ $rc -eq 0 ] && [[ $(totals gpu-tests) == "Passed all"* ]]; then say "PASS: gpu_tests: $(totals gpu-tests)"
else fail "gpu_tests (exit $rc): $(totals gpu-tests)"; fi
if [ $has_gpu -eq 1 ]; then
  catch gpu-oom 90 gpu_tests "[oom]"
  catch runtime-gpu 90 runtime_tests "[gpu]"
else
  say "SKIP: gpu_tests [oom], runtime_tests [gpu]: no GPU"
fi
catch cupti-tests 60 cupti_tests

check() {  # check NAME ARGS...: one verdict line from checks.py
  python3 "$here/share/checks.py" "$@" >> "$summary" 2>> "$logs/checks.log" || status=1
}

# ---- every sample on cuda, recorded and reported, one at a time
if [ $has_gpu -eq 1 ]; then
  mkdir -p "$logs/samples"
  for s in linear_regression linear_regression_fixed leak_loss_history mlp_classifier transfer_in_loop buffer_reuse \
           contiguity broadcast_truth inplace_autograd oom_recovery gpt_tiny cnn_classifier; do
    if step "sample-$s" 60 "$bin/memlens" record --device cuda -o "$logs/samples/$s.memtrace" -- "$bin/$s" &&
       step "report-$s" 30 "$bin/memlens" report --format json -o "$logs/samples/$s.json" "$logs/samples/$s.memtrace"; then
      check sample "$logs/samples/$s.json" "$s"
    else
      fail "sample $s: $(tail -1 "$logs/sample-$s.log")"
    fi
  done

  # ---- the CUPTI collector: a plain CUDA program, PyTorch, and beside the runtime's recorder
  step plain 30 "$bin/memlens" record --cupti -o "$logs/plain.memtrace" -- "$bin/plain_cuda" &&
    step plain-report 30 "$bin/memlens" report --format json -o "$logs/plain.json" "$logs/plain.memtrace"
  check plain "$logs/plain.json"
  MEMLENS_DEVICE=cuda MEMLENS_TRACE="$logs/both-runtime.memtrace" MEMLENS_CUPTI_TRACE="$logs/both-cupti.memtrace" \
    CUDA_INJECTION64_PATH="$here/lib/libmemlens_cupti.so" step both 60 "$bin/mlp_classifier"
  step both-export 30 "$bin/memlens" export --json "$logs/both-runtime.jsonl" "$logs/both-runtime.memtrace"
  step both-export-cupti 30 "$bin/memlens" export --json "$logs/both-cupti.jsonl" "$logs/both-cupti.memtrace"
  check side-by-side "$logs/both-runtime.jsonl" "$logs/both-cupti.jsonl"
  if [ $has_torch -eq 1 ]; then
    step torch 90 "$bin/memlens" record --cupti -o "$logs/torch.memtrace" -- python3 "$here/share/torch_alloc.py" \
      "$logs/torch_snapshot.pickle"
    cp "$logs/torch.log" "$logs/torch-run.log"
    step torch-report 30 "$bin/memlens" report --format json -o "$logs/torch.json" "$logs/torch.memtrace"
    step torch-snapshot 30 "$bin/memlens" report --format json -o "$logs/torch_snapshot.json" "$logs/torch_snapshot.pickle"
    check torch "$logs/torch.json" "$logs/torch-run.log" "$logs/torch_snapshot.json"

    # ---- the benchmarks beside PyTorch, in one run
    if step bench 100 python3 "$here/share/compare_torch_gpu.py" "$bin/bench_gpu" 3 && [ -s "$logs/bench.log" ]; then
      say "benchmarks beside PyTorch:"
      grep -v "^\s*$" "$logs/bench.log" >> "$summary"
    else
      fail "benchmarks: $(tail -1 "$logs/bench.log")"
    fi
  else
    say "SKIP: PyTorch checks and benchmarks: $torch_line"
  fi
else
  say "SKIP: samples on cuda, the CUPTI collector, PyTorch and the benchmarks: no GPU"
fi

say "status $status after $SECONDS s"
tar -czf "$out/gpu-logs.tar.gz" -C "$logs" . 2>/dev/null
rm -rf "$logs"
cat "$summary"
exit $status
