#!/bin/bash
# Prepares the GPU check on this machine (Debian, nvcc, sm_90) as one bundle for a lent GPU
# machine, which has the driver, the CUDA toolkit and PyTorch but none of memlens' other
# libraries and no network. The bundle holds the stripped binaries the check needs (the
# gpu tests, the samples, memlens, the CUPTI collector, plain_cuda, bench_gpu), every
# shared library they need beyond a plain Ubuntu base with the CUDA toolkit (found by
# ldd), and the run step (scripts/gpu/run.sh). Packed with xz at a 64 MiB dictionary, the
# binaries' identical CUDA fat binaries cost one copy.
#   scripts/gpu-bundle.sh [--from BUILD] [--stage DIR] [OUT]
# Without --from it builds build-gpu (Release, CUDA on). --stage DIR only lays the bundle
# out in DIR (what the gpu-bundle test runs), without packing. OUT defaults to
# gpu-bundle/memlens-gpu-bundle.tar.xz. Then, on the GPU machine, from the tree's root:
#   bash scripts/gpu-run.sh gpu-bundle/memlens-gpu-bundle.tar.xz
set -euo pipefail
cd "$(dirname "$0")/.."
build="" stage="" out=gpu-bundle/memlens-gpu-bundle.tar.xz
while [ $# -gt 0 ]; do
  case $1 in
    --from) build=$2; shift 2 ;;
    --stage) stage=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "gpu-bundle.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) out=$1; shift ;;
  esac
done
samples="linear_regression linear_regression_fixed leak_loss_history mlp_classifier transfer_in_loop buffer_reuse
         contiguity broadcast_truth inplace_autograd oom_recovery gpt_tiny cnn_classifier"
if [ -z "$build" ]; then
  build=build-gpu
  echo "gpu-bundle.sh: building $build (Release, CUDA on)"
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DMEMLENS_CUDA=ON -DMEMLENS_VIEWER=OFF -DMEMLENS_CHECK_BUILDS=OFF >/dev/null
  # shellcheck disable=SC2086
  cmake --build "$build" -j"$(nproc)" --target gpu_tests runtime_tests cupti_tests memlens memlens_cupti plain_cuda bench_gpu $samples
fi
for f in tests/gpu_tests tests/runtime_tests tests/cupti_tests tests/plain_cuda cli/memlens profiler/cupti/libmemlens_cupti.so \
         bench/bench_gpu; do
  [ -e "$build/$f" ] || { echo "gpu-bundle.sh: $build/$f is missing: a build with CUDA (nvcc and CUPTI) makes it" >&2; exit 2; }
done

dir=${stage:-$(mktemp -d)}
[ -n "$stage" ] || trap 'rm -rf "$dir"' EXIT
rm -rf "$dir" && mkdir -p "$dir/bin" "$dir/lib" "$dir/share"
for f in tests/gpu_tests tests/runtime_tests tests/cupti_tests tests/plain_cuda cli/memlens bench/bench_gpu; do
  cp "$build/$f" "$dir/bin/"
done
for s in $samples; do cp "$build/samples/$s" "$dir/bin/"; done
cp "$build/profiler/cupti/libmemlens_cupti.so" "$dir/lib/"
strip --strip-unneeded "$dir"/bin/* "$dir"/lib/*.so

# Every library the binaries need, but the C library and the C++ runtime (a plain Ubuntu
# base has them: Debian 12's libstdc++ would need glibc 2.36) and the CUDA toolkit's and
# driver's (the GPU machine has its own).
base='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libutil|libgcc_s|libstdc\+\+|libcuda|libcudart|libcublas|libcublasLt|libcupti|libnvrtc|libnvJitLink)\.so'
for f in "$dir"/bin/* "$dir"/lib/*.so; do
  ldd "$f" | awk '/=>/ { print $1, $3 }'
done | sort -u | while read -r name path; do
  if echo "$name" | grep -Eq "$base"; then continue; fi
  [ -e "$path" ] || { echo "gpu-bundle.sh: $name not found on this machine" >&2; exit 2; }
  cp -L "$path" "$dir/lib/$name"
done
# Ubuntu 22.04 (glibc 2.35, GCC 12's libstdc++) is the oldest base the bundle may meet.
newer=$(for f in "$dir"/bin/* "$dir"/lib/*; do
  objdump -T "$f" | { grep -Eo "GLIBC_2\.(3[6-9]|[4-9][0-9])|GLIBCXX_3\.4\.(3[1-9])" || true; } | sed "s|^|$(basename "$f"): |"
done | sort -u)
[ -z "$newer" ] || { echo "gpu-bundle.sh: needs a newer C or C++ library than Ubuntu 22.04's: $newer" >&2; exit 2; }
cp scripts/gpu/run.sh bench/compare_torch_gpu.py scripts/gpu/*.py "$dir/share/"
mv "$dir/share/run.sh" "$dir/run.sh"
git rev-parse --short HEAD > "$dir/share/commit" 2>/dev/null || echo unknown > "$dir/share/commit"
echo "gpu-bundle.sh: $(du -sh "$dir" | cut -f1) in $(find "$dir" -type f | wc -l) files"
[ -n "$stage" ] && exit 0

mkdir -p "$(dirname "$out")"
tar -C "$dir" -cf - . | xz -9e --lzma2=dict=64MiB -T1 > "$out.part"
mv "$out.part" "$out"
size=$(stat -c %s "$out")
echo "gpu-bundle.sh: wrote $out ($((size / 1048576)) MiB)"
[ "$size" -lt $((48 << 20)) ] || { echo "gpu-bundle.sh: $out is over 48 MiB: too large to travel with the tree" >&2; exit 1; }
