#!/bin/bash
# The GPU check on the lent GPU machine: unpacks the bundle (scripts/gpu-bundle.sh) into a
# scratch folder and runs its run step there; OUT (default ./gpu-check-out) gets the
# summary and the logs' archive.
#   bash scripts/gpu-run.sh gpu-bundle/memlens-gpu-bundle.tar.xz
set -eu
bundle=${1:?usage: gpu-run.sh BUNDLE.tar.xz}
[ -f "$bundle" ] || { echo "gpu-run.sh: $bundle: no such file (scripts/gpu-bundle.sh makes it)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# tar needs xz for -J; Python's tarfile reads it where xz is missing.
tar -xJf "$bundle" -C "$dir" 2>/dev/null ||
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$bundle" "$dir"
export OUT=${OUT:-$PWD/gpu-check-out}
bash "$dir/run.sh"
