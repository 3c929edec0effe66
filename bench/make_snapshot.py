#!/usr/bin/env python3
"""Writes a synthetic PyTorch memory snapshot shaped like the real ones: a dict with
segments, device_traces, allocator_settings and external_annotations; trace entries whose
frames are fresh lists of shared frame dicts (pickle's memo then stores each frame once,
as PyTorch's own files do); C++ and Python frames mixed; training steps of allocations and
frees under ProfilerStep annotations.

Usage: make_snapshot.py OUT.pickle [ENTRIES (default 2000000)] [FRAMES per stack (24)]
Prints one JSON line: entries, bytes, stacks.
"""
import json
import os
import pickle
import random
import sys


def main():
    out = sys.argv[1]
    entries = int(sys.argv[2]) if len(sys.argv) > 2 else 2_000_000
    depth = int(sys.argv[3]) if len(sys.argv) > 3 else 24
    rng = random.Random(7)

    cpp = [{"name": "at::native::op_%d(at::Tensor const&)" % i, "filename": "??", "line": 0} for i in range(300)]
    engine = {"name": "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)",
              "filename": "??", "line": 0}
    nodes = [{"name": "torch::autograd::generated::Op%dBackward0::apply(std::vector<at::Tensor>&&)" % i,
              "filename": "Functions.cpp", "line": 0} for i in range(40)]
    py = [{"name": "forward", "filename": "/home/user/project/model/layer%d.py" % (i % 30), "line": 10 + i}
          for i in range(200)]
    framework = [{"name": "_call_impl", "filename": "/usr/lib/python3/site-packages/torch/nn/modules/module.py",
                  "line": 1750}]

    def stack(backward):
        frames = [rng.choice(cpp) for _ in range(depth - 4)]
        if backward:
            return frames[:-2] + [rng.choice(nodes), engine] + frames[-2:]
        return frames[:depth - 6] + [rng.choice(py), framework[0], rng.choice(py), framework[0]] + frames[depth - 6:]

    stacks = [stack(i % 3 == 0) for i in range(400)]

    seg_size = 20 << 20
    segments_alive = []
    trace = []
    annotations = []
    t = 1_700_000_000_000_000
    live = []
    next_addr = 0x7F0000000000
    step = 0
    while len(trace) < entries:
        step += 1
        annotations.append({"stage": "START", "name": "ProfilerStep#%d" % step, "device": 0, "time_us": t})
        # A step: allocate up to 300 blocks, free most of them, keep a few.
        for _ in range(300):
            if len(trace) >= entries:
                break
            size = rng.choice([512, 4096, 1 << 20, 3 << 20, 8 << 20])
            if not segments_alive or rng.random() < 0.02:
                trace.append({"action": "segment_alloc", "addr": next_addr, "size": seg_size, "stream": 0, "time_us": t,
                              "frames": list(rng.choice(stacks))})
                segments_alive.append(next_addr)
                next_addr += seg_size
                t += 1
            addr = rng.choice(segments_alive) + rng.randrange(0, seg_size // 2, 512)
            trace.append({"action": "alloc", "addr": addr, "size": size, "stream": 0, "time_us": t,
                          "frames": list(rng.choice(stacks))})
            live.append((addr, size))
            t += 1
            if len(live) > 200 and len(trace) + 2 <= entries:
                a, s = live.pop(rng.randrange(len(live)))
                for action in ("free_requested", "free_completed"):
                    trace.append({"action": action, "addr": a, "size": s, "stream": 0, "time_us": t,
                                  "frames": list(rng.choice(stacks))})
                t += 1
        annotations.append({"stage": "END", "name": "ProfilerStep#%d" % step, "device": 0, "time_us": t})
        t += 10

    snapshot = {
        "segments": [{"device": 0, "address": a, "total_size": seg_size, "allocated_size": 0, "active_size": 0,
                      "requested_size": 0, "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
                      "is_expandable": False, "frames": [], "blocks": []} for a in segments_alive],
        "device_traces": [trace[:entries]],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "expandable_segments": False,
                               "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)}},
        "external_annotations": annotations,
    }
    with open(out, "wb") as f:
        pickle.dump(snapshot, f, protocol=4)
    print(json.dumps({"entries": entries, "bytes": os.path.getsize(out), "stacks": len(stacks), "frames_per_stack": depth}))


if __name__ == "__main__":
    main()
