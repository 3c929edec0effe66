"""memlens for PyTorch programs: record a run into a .memtrace that every memlens
analysis, `check`, `diff`, `view` and the HTML report read.

    memlens record -o run.memtrace -- python3 train.py      # an unmodified script
    python3 -m memlens record -o run.memtrace train.py      # the same, from Python

    import memlens
    with memlens.record("run.memtrace"):                    # a notebook, a test
        for batch in data:
            ...
            memlens.step()                                  # optional: optimizer.step() marks steps too

Recording sees every aten op below autograd (PyTorch's TorchDispatchMode), so views,
copies, casts, transfers and broadcasts are events at the user's own line.
"""
import contextlib

__all__ = ["record", "step", "scope", "recording"]


@contextlib.contextmanager
def record(path, program=None):
    """Records what runs inside the block into the trace at `path`."""
    from ._recording import Recording

    r = Recording(path, program)
    try:
        yield r
    finally:
        r.close()


def recording():
    """The recording running now, or None."""
    from ._recording import Recording

    return Recording.current


def step():
    """Marks an iteration boundary (an optimizer's step() marks one by itself)."""
    r = recording()
    if r is not None:
        r.step()


@contextlib.contextmanager
def scope(name):
    """A named region, shown as a band in the viewer."""
    r = recording()
    if r is not None:
        r.scope(name, True)
    try:
        yield
    finally:
        r = recording()
        if r is not None:
            r.scope(name, False)
