#!/bin/sh
# Installs the Debian packages memlens builds with, only those missing (idempotent).
# Run as root on Debian 12. CUDA (nvcc, CUPTI) is expected under /usr/local/cuda when present.
# python3-torch (PyTorch 1.13, CPU) is for the tests of recording PyTorch programs only.
set -eu
PACKAGES="build-essential cmake pkg-config clang clang-format libclang-rt-dev catch2 nlohmann-json3-dev libopenblas-dev libbenchmark-dev libabsl-dev libzstd-dev zlib1g-dev libdw-dev libcli11-dev libxml2-utils libimgui-dev libglfw3-dev libstb-dev libgl-dev xvfb xauth libgl1-mesa-dri libglx-mesa0 chromium libsqlite3-dev python3-torch"
missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "memlens: installing$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends $missing || { apt-get update && apt-get install -y --no-install-recommends $missing; }
fi
