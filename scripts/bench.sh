#!/bin/sh
# Builds the benchmarks in Release and writes their JSON results to bench/results/.
# Timings on a shared 2-core machine are noisy: compare figures from one run. Random
# interleaving keeps the order of benchmarks from favouring the first (it did: view vs
# reshape of a contiguous tensor measured 113 vs 145 ns in order, 114 vs 114 ns interleaved).
set -eu
cd "$(dirname "$0")/.."
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-release -j2 --target bench_allocator bench_views bench_recorder bench_ops bench_report memlens memlens-viewer \
  linear_regression linear_regression_fixed mlp_classifier
mkdir -p bench/results
for b in bench_allocator bench_views bench_recorder bench_ops; do
  echo "memlens: running $b"
  build-release/bench/$b --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
    --benchmark_enable_random_interleaving=true \
    --benchmark_min_time=0.2 --benchmark_out=bench/results/$b.json --benchmark_out_format=json
done
# The same ops beside PyTorch's CPU build, one thread each, when PyTorch is importable.
if python3 -c "import torch" 2>/dev/null; then
  echo "memlens: running bench_ops beside PyTorch"
  OPENBLAS_NUM_THREADS=1 python3 bench/compare_torch.py build-release/bench/bench_ops 3 > bench/results/compare_torch.json
  cat bench/results/compare_torch.json
fi
# What recording costs whole programs: plain, recorded and with stacks, interleaved.
echo "memlens: running overhead.py (samples plain against recorded)"
python3 bench/overhead.py build-release/samples build-release/cli/memlens 7 > bench/results/overhead.json
cat bench/results/overhead.json
echo "memlens: running bench_report (10 M events)"
trace=/tmp/memlens-bench-10M.memtrace
build-release/bench/bench_report 10000000 $trace --keep > bench/results/bench_report.json
cat bench/results/bench_report.json
# The viewer on the same trace, headless under Xvfb (Mesa's software renderer):
# time to the first frame, to the analysed report, and the mean of 120 frames after it.
echo "memlens: running memlens-viewer on it"
xvfb-run -a -s "-screen 0 1920x1200x24" build-release/viewer/memlens-viewer $trace --frames 120 --benchmark \
  > bench/results/bench_viewer.json
cat bench/results/bench_viewer.json
rm -f $trace
# PyTorch snapshot import on a synthetic 2 M-entry snapshot: speed, RSS against the
# file, and the viewer on the snapshot itself.
echo "memlens: running bench_snapshot (2 M trace entries)"
python3 bench/bench_snapshot.py build-release/cli/memlens 2000000 --viewer build-release/viewer/memlens-viewer \
  > bench/results/bench_snapshot.json
cat bench/results/bench_snapshot.json
