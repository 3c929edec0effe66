"""Imported at start-up by every Python process that a recording's program starts
(`python3 -m memlens record` puts this folder on their PYTHONPATH): a torch.distributed
worker (RANK set, as torchrun sets it) records itself into its own trace, named for its
rank. Any other process is left alone. The sitecustomize this one shadows (Debian has
one) runs first, so nothing else changes."""
import importlib.util
import os
import sys


def _run_shadowed():
    here = os.path.dirname(os.path.abspath(__file__))
    for folder in sys.path:
        if not folder or os.path.abspath(folder) == here:
            continue
        candidate = os.path.join(folder, "sitecustomize.py")
        if os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("_memlens_shadowed_sitecustomize", candidate)
            spec.loader.exec_module(importlib.util.module_from_spec(spec))
            return


_run_shadowed()
if os.environ.get("MEMLENS_PYTHON_TRACE") and os.environ.get("RANK") is not None:
    try:
        from memlens import _launch

        _launch.record_worker()
    except Exception as e:  # noqa: BLE001 - never stop the user's worker
        sys.stderr.write("memlens: rank %s not recorded: %s\n" % (os.environ.get("RANK"), e))
