"""Running a Python program under the recorder, as `python3 PROGRAM` would run it.

The recording ends when the program's main code returns (or raises, or calls
sys.exit), before the interpreter tears down. Then a module-level name bound to a tensor
is let go first: it holds the loop's last value, as a local of main() would in a C++
program, which is gone when main returns. What lists, dicts and objects at module level
still hold (a cache never cleared) is alive at the end of the trace: a leak.

Processes the program starts inherit what they need to be recorded too: a
torch.distributed worker (RANK set, as torchrun sets it) records itself into the trace's
name with its rank added (run.memtrace -> run.rank0.memtrace), through the
sitecustomize in _workers/.
"""
import atexit
import builtins
import gc
import os
import runpy
import sys
import types

import torch

from ._recording import Recording

_HERE = os.path.dirname(os.path.abspath(__file__))


def main_module(module=None, code_text=None, path=None):
    """A fresh __main__ and the program's code, as runpy makes them; the module stays in
    sys.modules, so its globals outlive the run until the interpreter ends."""
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    if module:
        # runpy's own lookup of a module run with -m (a package runs its __main__).
        _, spec, code = runpy._get_module_details(module)  # noqa: SLF001
        main.__spec__, main.__file__, main.__loader__ = spec, spec.origin, spec.loader
        main.__package__ = spec.parent
    elif code_text is not None:
        code = compile(code_text, "<string>", "exec")
    else:
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec")
        main.__file__ = path
    sys.modules["__main__"] = main
    return main, code


def release_loop_values(main):
    """Lets go of the module-level names bound to tensors (see above), then collects."""
    for key, value in list(main.__dict__.items()):
        if isinstance(value, torch.Tensor):
            del main.__dict__[key]
    gc.collect()


def pass_to_children(trace):
    """What a process the program starts needs to record itself (a torchrun worker)."""
    package_parent = os.path.dirname(_HERE)
    paths = [os.path.join(_HERE, "_workers"), package_parent]
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(paths + ([old] if old else []))
    os.environ["MEMLENS_PYTHON_TRACE"] = os.path.abspath(trace)
    library = Recording.library_path()
    if library:
        os.environ["MEMLENS_RECORD_ABI"] = library


def rank_trace(trace, rank):
    stem, ext = os.path.splitext(trace)
    return "%s.rank%s%s" % (stem, rank, ext or ".memtrace")


class Launch:
    """The program compiled and its recording open (errors here are memlens'), then run."""

    def __init__(self, output, name, argv, module=None, code_text=None):
        self._main, self._code = main_module(module, code_text, None if module or code_text is not None else name)
        sys.argv = argv
        if module is None and code_text is None:
            sys.path[0] = os.path.dirname(os.path.abspath(name))
        elif code_text is not None:
            sys.path[0] = ""
        self._recording = Recording(output, name)
        pass_to_children(output)

    def run(self):
        """Runs the program; returns its exit status (SystemExit's code). Its own
        exceptions go on up, as python3 would print them."""
        try:
            exec(self._code, self._main.__dict__)  # noqa: S102 - the user's program, as python3 runs it
        except SystemExit as e:
            return e.code
        finally:
            release_loop_values(self._main)
            try:
                self._recording.close()
            except RuntimeError:
                pass  # the trace could not be finished: the library has said why, once

        return 0


def record_worker():
    """Records this process, a torch.distributed worker, until its main code is done
    (atexit runs before the interpreter tears modules down)."""
    rank, world = os.environ["RANK"], os.environ.get("WORLD_SIZE", "?")
    program = sys.argv[0] if sys.argv and sys.argv[0] else "python"
    recording = Recording(rank_trace(os.environ["MEMLENS_PYTHON_TRACE"], rank), program,
                          notes="torch.distributed rank %s of %s" % (rank, world))

    def stop():
        main = sys.modules.get("__main__")
        if main is not None:
            release_loop_values(main)
        try:
            recording.close()
        except RuntimeError:
            pass  # the library has said why, once

    atexit.register(stop)
