#!/usr/bin/env python3
"""Ground truth for memlens' PyTorch snapshot reader, computed with Python's own pickle
module and nothing of memlens: per device, the allocations, peak allocated and reserved,
final allocated and reserved, and the bytes by site at the allocated peak.

The rules are those docs/pytorch.md states, written again here from the documentation:
- allocated rises at `alloc` and falls at `free_completed` by the entry's size; reserved
  rises at `segment_alloc`/`segment_map` and falls at `segment_free`/`segment_unmap`;
- the state at the first entry is the state at dump (segments; blocks `active_*`, counted
  by `requested_size`) with the entries undone, newest first;
- entries are taken in time order (`time_us`), file order within a time;
- a site is the innermost .py frame outside site-packages, dist-packages, /lib/python and
  /torch/ ("FILE:LINE"), else the autograd node of the first frame naming one
  ("autograd:DivBackward0", "autograd:engine"), else none (""); a block that existed
  before the first entry without such a frame is "<before recording>".

Usage: snapshot_truth.py SNAPSHOT.pickle  (prints JSON)
       snapshot_truth.py --blocks SNAPSHOT.pickle  (each `alloc` entry in time order, with
       the time of the `free_completed` that ends it: what a recorder of the same program
       would have seen as storages)
"""
import json
import pickle
import re
import sys

NODE = re.compile(r"([A-Za-z0-9_]+)::apply\(")


def user_frame(f):
    name = f.get("filename", "")
    if not name.endswith(".py"):
        return False
    return not any(part in name for part in ("/site-packages/", "/dist-packages/", "/torch/", "/lib/python"))


def site_of(frames):
    for f in frames or []:
        if user_frame(f):
            line = f.get("line", 0)
            return f["filename"] + (":" + str(line) if line else "")
    for f in frames or []:
        name = f.get("name", "")
        if "torch::autograd::" not in name:
            continue
        m = NODE.search(name, name.index("torch::autograd::"))
        if m:
            return "autograd:" + m.group(1)
        if "torch::autograd::Engine::" in name:
            return "autograd:engine"
    return ""


def main(path):
    with open(path, "rb") as f:
        snap = pickle.load(f)
    segments = snap if isinstance(snap, list) else snap.get("segments", [])
    traces = [] if isinstance(snap, list) else snap.get("device_traces", [])

    devices = {}
    def dev(d):
        return devices.setdefault(d, {"segments": {}, "blocks": {}})

    for s in segments:
        d = dev(s["device"])
        d["segments"][s["address"]] = s["total_size"]
        for b in s.get("blocks", []):
            if b["state"] in ("active_allocated", "active_pending_free"):
                size = b["requested_size"] if "requested_size" in b else b["size"]
                d["blocks"][b["address"]] = (size, site_of(b.get("frames")) or "<before recording>")

    entries = []
    for device, trace in enumerate(traces):
        if trace:
            dev(device)
        for i, e in enumerate(trace):
            entries.append((e.get("time_us", i), len(entries), device, e))
    entries.sort(key=lambda x: (x[0], x[1]))

    # Undo the entries, newest first.
    for _, _, device, e in reversed(entries):
        d = devices[device]
        a = e["action"]
        if a in ("segment_alloc", "segment_map"):
            d["segments"].pop(e["addr"], None)
        elif a in ("segment_free", "segment_unmap"):
            d["segments"][e["addr"]] = e["size"]
        elif a == "alloc":
            d["blocks"].pop(e["addr"], None)
        elif a == "free_completed":
            d["blocks"].setdefault(e["addr"], (e["size"], "<before recording>"))

    out = {}
    state = {}
    for device, d in devices.items():
        st = {"segments": dict(d["segments"]), "blocks": dict(d["blocks"]), "allocs": len(d["blocks"])}
        st["reserved"] = sum(st["segments"].values())
        st["allocated"] = sum(size for size, _ in st["blocks"].values())
        st["peak_reserved"] = st["reserved"]
        st["peak_allocated"] = st["allocated"]
        st["peak_sites"] = by_site(st["blocks"])
        state[device] = st

    for _, _, device, e in entries:
        st = state[device]
        a = e["action"]
        if a in ("segment_alloc", "segment_map"):
            if e["addr"] not in st["segments"]:
                st["reserved"] += e["size"]
            st["segments"][e["addr"]] = e["size"]
        elif a in ("segment_free", "segment_unmap"):
            old = st["segments"].pop(e["addr"], None)
            if old is not None:
                st["reserved"] -= old
        elif a == "alloc":
            old = st["blocks"].pop(e["addr"], None)
            if old is not None:
                st["allocated"] -= old[0]
            st["blocks"][e["addr"]] = (e["size"], site_of(e.get("frames")))
            st["allocated"] += e["size"]
            st["allocs"] += 1
        elif a == "free_completed":
            old = st["blocks"].pop(e["addr"], None)
            if old is not None:
                st["allocated"] -= old[0]
        if st["allocated"] > st["peak_allocated"]:
            st["peak_allocated"] = st["allocated"]
            st["peak_sites"] = by_site(st["blocks"])
        st["peak_reserved"] = max(st["peak_reserved"], st["reserved"])

    for device, st in sorted(state.items()):
        out["cuda:%d" % device] = {
            "allocs": st["allocs"],
            "peak_allocated": st["peak_allocated"],
            "peak_reserved": st["peak_reserved"],
            "final_allocated": st["allocated"],
            "final_reserved": st["reserved"],
            "peak_sites": st["peak_sites"],
        }
    json.dump(out, sys.stdout, sort_keys=True)


def by_site(blocks):
    sites = {}
    for size, site in blocks.values():
        sites[site] = sites.get(site, 0) + size
    return {k: v for k, v in sites.items() if v}


def blocks(path):
    with open(path, "rb") as f:
        snap = pickle.load(f)
    entries = []
    for device, trace in enumerate(snap.get("device_traces", [])):
        for i, e in enumerate(trace):
            entries.append((e.get("time_us", i), len(entries), device, e))
    entries.sort(key=lambda x: (x[0], x[1]))
    out, open_blocks = [], {}
    for time_us, _, device, e in entries:
        if e["action"] == "alloc":
            open_blocks[(device, e["addr"])] = len(out)
            out.append({"device": device, "addr": e["addr"], "size": e["size"], "born_us": time_us, "freed_us": None})
        elif e["action"] == "free_completed" and (device, e["addr"]) in open_blocks:
            out[open_blocks.pop((device, e["addr"]))]["freed_us"] = time_us
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    if sys.argv[1] == "--blocks":
        blocks(sys.argv[2])
    else:
        main(sys.argv[1])
