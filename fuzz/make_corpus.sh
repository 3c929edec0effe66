#!/bin/sh
# Rebuilds the seed corpus fuzz/corpus/trace/ from the samples, recorded small by the
# memlens of BUILD (default build/): whole traces, one with native stacks, one cut, one
# without trailer. Module tables are dropped, so the fuzzers do not parse this machine's
# binaries on every input (address sites then read as unknown, which is what they test).
#   fuzz/make_corpus.sh [BUILD]
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
out=fuzz/corpus/trace
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MEMLENS_SIM_MEMORY=1GiB
rec() { "$build/cli/memlens" record -o "$tmp/$1.memtrace" $3 -- "$build/samples/$2" $4 >/dev/null 2>&1; }
rec lr linear_regression "" 3
rec lr_stacks linear_regression --stacks 2
rec leak leak_loss_history "" 4
rec mlp mlp_classifier "" "--steps 2"
for s in transfer_in_loop contiguity oom_recovery buffer_reuse broadcast_truth inplace_autograd; do rec "$s" "$s" "" ""; done
python3 - "$tmp" "$out" <<'PY'
import glob, os, struct, sys
src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
for old in glob.glob(os.path.join(out, "*.memtrace")):
    os.remove(old)
for path in sorted(glob.glob(os.path.join(src, "*.memtrace"))):
    data = open(path, "rb").read()
    json_len = struct.unpack_from("<I", data, 12)[0]
    at = 16 + json_len + 4
    kept = bytearray(data[:at])
    footer = struct.unpack_from("<Q", data, len(data) - 16)[0]
    new_footer = None
    while at < len(data) - 16:
        ctype = data[at + 4]
        stored = struct.unpack_from("<I", data, at + 24)[0]
        end = at + 32 + stored
        if at == footer:
            new_footer = len(kept)
        if ctype != 4:  # drop module tables
            kept += data[at:end]
        at = end
    kept += struct.pack("<Q", new_footer) + b"MEMTEND!"
    name = os.path.basename(path)
    open(os.path.join(out, name), "wb").write(kept)
    if name == "lr.memtrace":
        open(os.path.join(out, "lr_cut.memtrace"), "wb").write(kept[: len(kept) * 2 // 3])
        open(os.path.join(out, "lr_no_trailer.memtrace"), "wb").write(kept[:-16])
PY
ls -l "$out"
