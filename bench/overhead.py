#!/usr/bin/env python3
"""Whole programs, plain against recorded: what a user pays for MEMLENS_TRACE.

Runs each sample plain, recorded, and recorded with native stacks (MEMLENS_STACKS=1),
the three modes in a fresh random order every round so that neither the machine's
drift nor the order favours one. Prints one JSON object: per sample the median wall
time of each mode, the ratios of the medians (targets: recorded <= 1.05x, with stacks
<= 1.15x) and the trace's bytes per event (target <= 6).

    overhead.py SAMPLES_DIR MEMLENS [ROUNDS]   (default 7 rounds)

SAMPLES_DIR holds the built samples (build-release/samples), MEMLENS the memlens binary
(it counts a trace's events).
"""
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

SAMPLES = [
    ("linear_regression_fixed", ["3000"]),
    ("linear_regression", ["3000"]),
    ("mlp_classifier", ["--steps", "200"]),
    # Long runs (issue 42): the recording's cost at steady state, which short runs hide.
    ("linear_regression_fixed", ["30000"]),
    ("mlp_classifier", ["--steps", "2000"]),
]
MODES = {"plain": {}, "recorded": {"MEMLENS_TRACE": None}, "stacks": {"MEMLENS_TRACE": None, "MEMLENS_STACKS": "1"}}
TARGETS = {"recorded": 1.05, "stacks": 1.15}
MAX_BYTES_PER_EVENT = 6.0


def run(program, args, mode, trace):
    env = dict(os.environ)
    for k in ("MEMLENS_TRACE", "MEMLENS_STACKS"):
        env.pop(k, None)
    for k, v in MODES[mode].items():
        env[k] = trace if v is None else v
    t0 = time.perf_counter()
    done = subprocess.run([program] + args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit("overhead: %s %s (%s) failed: %s" % (program, " ".join(args), mode, done.stderr.decode().strip()))
    return elapsed


def events_in(memlens, trace):
    # The summary's count comes from the trace's footer totals: no pass over the events.
    done = subprocess.run([memlens, "summary", "--format", "json", trace], check=True, capture_output=True)
    return json.loads(done.stdout)["traces"][0]["events"]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    samples_dir, memlens = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 7
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "run.memtrace")
        for name, args in SAMPLES:
            program = os.path.join(samples_dir, name)
            if not os.access(program, os.X_OK):
                sys.exit("overhead: no built sample %s (build the samples first)" % program)
            times = {m: [] for m in MODES}
            run(program, args, "plain", trace)  # warm the page cache
            for r in range(rounds):
                order = list(MODES)
                random.shuffle(order)
                for m in order:
                    times[m].append(run(program, args, m, trace))
                print(f"overhead: {name} round {r + 1}/{rounds}", file=sys.stderr)
            run(program, args, "recorded", trace)
            events = events_in(memlens, trace)
            size = os.path.getsize(trace)
            med = {m: statistics.median(t) for m, t in times.items()}
            ratios = {m: med[m] / med["plain"] for m in TARGETS}
            results.append({
                "sample": name, "args": args, "rounds": rounds,
                "median_seconds": {m: round(v, 4) for m, v in med.items()},
                "ratio": {m: round(v, 3) for m, v in ratios.items()},
                "events": events, "trace_bytes": size,
                "bytes_per_event": round(size / max(events, 1), 2),
                "targets_met": all(ratios[m] <= TARGETS[m] for m in TARGETS) and size / max(events, 1) <= MAX_BYTES_PER_EVENT,
            })
    print(json.dumps({"benchmark": "recording_overhead", "targets": TARGETS,
                      "max_bytes_per_event": MAX_BYTES_PER_EVENT, "samples": results}, indent=1))


if __name__ == "__main__":
    main()
