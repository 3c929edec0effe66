#!/bin/sh
# Long fuzzing runs: builds the fuzz targets with Clang, libFuzzer, ASan and UBSan in
# build-fuzz/, then runs each target for SECONDS (default 600) on JOBS workers (default
# the number of cores), growing build-fuzz/fuzz/corpus_NAME from the seeds in
# fuzz/corpus/ (and ../shared/torch-snapshots for the snapshot target, where it exists).
# Crashes land in build-fuzz/fuzz/crashes/; copy the ones you fix into the seed corpus so
# the ctest "fuzz" tests replay them from then on.
#   scripts/fuzz.sh [SECONDS] [TARGET...]      (targets: trace_reader report snapshot)
set -eu
cd "$(dirname "$0")/.."
seconds=${1:-600}
[ $# -gt 0 ] && shift
targets=${*:-"trace_reader report snapshot"}
jobs=${JOBS:-$(nproc)}
command -v clang++ >/dev/null || { echo "fuzz.sh: needs clang++ and libclang-rt-dev (apt-get install clang libclang-rt-dev)" >&2; exit 2; }
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMLENS_SANITIZE=address,undefined \
  -DMEMLENS_VIEWER=OFF -DMEMLENS_CUDA=OFF -DMEMLENS_CHECK_BUILDS=OFF >/dev/null
for t in $targets; do cmake --build build-fuzz -j"$jobs" --target "${t}_fuzz"; done
mkdir -p build-fuzz/fuzz/crashes
for t in $targets; do
  case $t in
    snapshot) corpus=snapshot; extra=$( [ -d ../shared/torch-snapshots ] && echo ../shared/torch-snapshots || true ) ;;
    *) corpus=trace; extra= ;;
  esac
  mkdir -p "build-fuzz/fuzz/corpus_$t"
  echo "fuzz.sh: $t for ${seconds}s on $jobs workers"
  status=0
  "build-fuzz/fuzz/${t}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -dict="fuzz/$corpus.dict" -artifact_prefix=build-fuzz/fuzz/crashes/ -print_final_stats=1 \
    -fork="$jobs" "build-fuzz/fuzz/corpus_$t" "fuzz/corpus/$corpus" $extra >"build-fuzz/fuzz/$t.log" 2>&1 || status=$?
  # The last progress line holds the executions and the crash count.
  grep -E "^#[0-9]+: cov|ERROR|SUMMARY|crash-" "build-fuzz/fuzz/$t.log" | tail -3
  [ "$status" -eq 0 ] || { echo "fuzz.sh: $t found a failure: see build-fuzz/fuzz/$t.log" >&2; exit 1; }
done
