#!/usr/bin/env python3
"""PyTorch snapshot import, measured: writes a synthetic snapshot (make_snapshot.py), then
times `memlens import` (speed in MB of pickle per second, peak RSS against the file's size)
and, where a viewer and xvfb-run are given, the viewer's first frame and frame time on the
snapshot itself. Prints one JSON object.

Usage: bench_snapshot.py MEMLENS [ENTRIES (2000000)] [--viewer MEMLENS_VIEWER] [--keep]
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def measured(cmd):
    """Wall seconds, peak RSS in bytes and stdout of one child."""
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("bench_snapshot: %s failed:\n%s" % (" ".join(cmd), out.decode(errors="replace")))
    return wall, usage.ru_maxrss * 1024, out.decode(errors="replace")


def main():
    args = sys.argv[1:]
    keep = "--keep" in args
    viewer = None
    if "--viewer" in args:
        viewer = args[args.index("--viewer") + 1]
        del args[args.index("--viewer"):args.index("--viewer") + 2]
    args = [a for a in args if a != "--keep"]
    memlens = args[0]
    entries = int(args[1]) if len(args) > 1 else 2_000_000

    work = tempfile.mkdtemp(prefix="memlens-bench-snapshot-")
    snapshot = os.path.join(work, "synthetic.pickle")
    trace = os.path.join(work, "synthetic.memtrace")
    made = json.loads(subprocess.check_output([sys.executable, os.path.join(HERE, "make_snapshot.py"), snapshot,
                                               str(entries)]))
    size = made["bytes"]
    result = {"benchmark": "snapshot_import", "entries": entries, "pickle_bytes": size,
              "frames_per_stack": made["frames_per_stack"]}

    wall, rss, _ = measured([memlens, "import", snapshot, "-o", trace])
    result.update({"import_s": round(wall, 3), "import_mb_per_s": round(size / wall / 1e6, 1),
                   "import_peak_rss_bytes": rss, "import_rss_over_file": round(rss / size, 2),
                   "trace_bytes": os.path.getsize(trace)})
    wall, rss, _ = measured([memlens, "summary", snapshot])
    result.update({"summary_of_snapshot_s": round(wall, 3), "summary_peak_rss_bytes": rss})

    if viewer and shutil.which("xvfb-run"):
        _, _, out = measured(["xvfb-run", "-a", "-s", "-screen 0 1920x1200x24", viewer, snapshot, "--frames", "120",
                              "--benchmark"])
        line = [l for l in out.splitlines() if l.startswith("{")]
        if line:
            v = json.loads(line[-1])
            result.update({"viewer_first_frame_s": v["time_to_first_frame_s"], "viewer_report_s": v["time_to_report_s"],
                           "viewer_mean_frame_ms": v["mean_frame_ms"]})
    if not keep:
        shutil.rmtree(work)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
