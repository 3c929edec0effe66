"""The CUDA caching allocator's own trace of a recording.

The dispatch mode sees storages, not the allocator under them: each storage would be its
own block, with no segments, no rounding, no cache. So while a recording runs on a
machine with CUDA, PyTorch keeps its allocator's history
(`torch.cuda.memory._record_memory_history`, without stacks: the recorder has the
sites), and at the end a snapshot of it is merged into the trace by memlens' C++ side
(memlens_abi_close_with_allocator_trace): the allocator's segments and blocks, each
block a storage was seen on keeping that storage's role and line.

PyTorch 2.1 and later only: before it, trace entries carry no times to merge by.
"""
import os
import sys

# PyTorch's ring of entries: the oldest are dropped past it (the merge then starts from
# the state the snapshot rewinds to). About 100 bytes an entry without stacks.
_MAX_ENTRIES = int(os.environ.get("MEMLENS_CUDA_HISTORY_ENTRIES", "10000000"))


class AllocatorHistory:
    def __init__(self, torch):
        self._torch = torch
        self.on = False
        self.why_not = ""
        if not torch.cuda.is_available():
            self.why_not = "no CUDA device"
            return
        try:
            torch.cuda.memory._record_memory_history(enabled="all", context=None, max_entries=_MAX_ENTRIES)
        except (TypeError, AttributeError, RuntimeError) as e:  # PyTorch before 2.1
            self.why_not = "PyTorch %s keeps no timed allocator history (%s)" % (torch.__version__, e)
            return
        self.on = True

    def close(self, abi, trace_path):
        """Ends the history and closes the trace, merged with it. A merge that fails leaves
        the trace as recorded, and says so."""
        if not self.on:
            return abi.memlens_abi_close()
        self.on = False
        snapshot = trace_path + ".allocator.pickle"
        try:
            self._torch.cuda.memory._dump_snapshot(snapshot)
        except Exception as e:  # noqa: BLE001 - the recording stands without it
            sys.stderr.write("memlens: the CUDA caching allocator's trace was not taken: %s\n" % e)
            self._stop()
            return abi.memlens_abi_close()
        self._stop()
        try:
            status = abi.memlens_abi_close_with_allocator_trace(snapshot.encode())
            if status == 1:  # the trace stands as recorded
                sys.stderr.write("memlens: %s\n" % abi.memlens_abi_error().decode(errors="replace"))
                return 0
            return status
        finally:
            try:
                os.remove(snapshot)
            except OSError:
                pass

    def _stop(self):
        try:
            self._torch.cuda.memory._record_memory_history(enabled=None)
        except Exception:  # noqa: BLE001
            pass
