"""memlens' CUDA allocator history, end to end through the C ABI, with a stand-in for
torch.cuda (no GPU here): the history is started at the recording's start and stopped at
its end; the snapshot it dumps is merged into the trace and removed.

A recording on "cpu,cuda:0" sees one storage of 1,000 bytes on cuda:0. The stand-in
allocator put it in a 1,024-byte block of a 2 MiB segment, beside a 4,096-byte block no
storage was seen on. `broken` dumps a file that is not a snapshot: the trace then stands
as recorded, and says why.

Usage: allocator_history.py TRACE [broken]
"""
import os
import pickle
import sys
import time
import types

from memlens import _abi
from memlens._allocator_history import AllocatorHistory
from memlens._vocabulary import CATEGORY

trace, broken = sys.argv[1], sys.argv[2:] == ["broken"]
SEGMENT = 0x7F0000000000
calls = []
entries = []


def now_us():
    return time.time_ns() // 1000


def record_memory_history(enabled="all", context="all", stacks="all", max_entries=0):
    calls.append((enabled, context))


def dump_snapshot(path):
    with open(path, "wb") as f:
        if broken:
            f.write(b"not a snapshot")
        else:
            pickle.dump({"segments": [], "device_traces": [entries]}, f, protocol=4)


memory = types.SimpleNamespace(_record_memory_history=record_memory_history, _dump_snapshot=dump_snapshot)
torch = types.SimpleNamespace(__version__="stand-in",
                              cuda=types.SimpleNamespace(is_available=lambda: True, memory=memory))

abi = _abi.load()
assert abi.memlens_abi_open(trace.encode(), b"allocator_history.py", b"cpu,cuda:0", b"") == 0
history = AllocatorHistory(torch)
assert history.on, history.why_not
t = now_us()
entries += [
    {"action": "segment_alloc", "addr": SEGMENT, "size": 2 << 20, "stream": 0, "time_us": t},
    {"action": "alloc", "addr": SEGMENT, "size": 1024, "stream": 0, "time_us": t},
    {"action": "alloc", "addr": SEGMENT + 1024, "size": 4096, "stream": 0, "time_us": t},
]
abi.memlens_abi_storage_alloc(1, SEGMENT, 1000, 1, CATEGORY["activation"], 0, 0)
assert history.close(abi, trace) == 0
assert calls == [("all", None), (None, "all")], calls
assert not os.path.exists(trace + ".allocator.pickle")
assert not os.path.exists(trace + ".merging")
print("closed")
