"""One recording of a PyTorch program: the C ABI's trace, the dispatch mode, and the
hooks that give storages their roles and the run its steps.

Roles, as PyTorch's memory timeline names them: parameters (`nn.Parameter`), gradients
(`.grad` when an optimizer steps), optimizer state (its `state`), activations (what
autograd saves for backward, seen by `saved_tensors_hooks`), temporaries (new memory in
the backward pass) and inputs (memory first seen going into an op: made before the
recording, or by a path the mode does not see, such as `torch.from_numpy`). Steps: each
`optimizer.step()` of any `torch.optim.Optimizer`, or `memlens.step()`.
"""
import sys
import time

import torch

from . import _abi
from ._allocator_history import AllocatorHistory
from ._backward_sites import BackwardSites
from ._dispatch import DispatchRecorder
from ._sites import Sites
from ._storages import Storages, trace_devices
from ._vocabulary import CATEGORY

_UNKNOWN, _TEMPORARY = CATEGORY["unknown"], CATEGORY["temporary"]


class Recording:
    current = None

    def __init__(self, path, program=None, notes=""):
        if Recording.current is not None:
            raise RuntimeError("memlens: a recording is already running")
        self.abi = _abi.load()
        names, numbers = trace_devices(torch)
        notes = "; ".join(n for n in ("recorded from PyTorch %s by memlens' Python recorder" % torch.__version__, notes) if n)
        if self.abi.memlens_abi_open(path.encode(), (program or sys.argv[0] or "python").encode(),
                                     ",".join(names).encode(), notes.encode()) != 0:
            raise RuntimeError("memlens: " + self.abi.memlens_abi_error().decode(errors="replace"))
        self.path = path
        self.allocator_history = AllocatorHistory(torch)
        self.sites = Sites(self.abi)
        self.storages = Storages(self.abi, numbers)
        self.backward_sites = BackwardSites(self.sites)
        self.storages.on_release = self.backward_sites.forget
        self.active = True
        self.steps = 0
        self._backward = 0
        self.quiet = 0  # > 0: ops memlens itself runs, not recorded
        self._failed = None
        self._mode = DispatchRecorder(self)
        self._saved_hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._undo = []
        Recording.current = self
        self._hook_optimizers()
        self._hook_backward()
        self._hook_process_groups()
        self._saved_hooks.__enter__()
        self._mode.__enter__()

    @staticmethod
    def library_path():
        """The C ABI library this process writes with (once loaded), for its children."""
        return _abi.loaded_path()

    # The dispatch mode's questions.
    def category_for_new(self):
        return _TEMPORARY if self._backward else _UNKNOWN

    def category_for_unseen(self, tensor):
        return CATEGORY["parameter"] if isinstance(tensor, torch.nn.Parameter) else CATEGORY["input"]

    def note_input(self, tensor, record):
        """A tensor object seen for the first time, going into an op."""
        if isinstance(tensor, torch.nn.Parameter):
            self.storages.set_category(record, "parameter")

    def guarded(self, fn, *args):
        """Runs a recording step; a failure of memlens' own stops the recording (with one
        message) rather than the user's program."""
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - the user's program must go on
            if self._failed is None:
                self._failed = e
                self.active = False
                sys.stderr.write("memlens: recording stopped: %s: %s\n" % (type(e).__name__, e))

    # Activations: what autograd saves. A tensor with a grad_fn (an op's output) is kept as
    # a detached alias, so no cycle runs through the node that saved it; its death is the
    # graph's end. (A "wrapped number", `x / 2.0`'s 2.0, has none, and cannot be
    # handed to an op from Python: it is kept as it is.)
    def _pack(self, tensor):
        if not self.active:
            return tensor
        saved = tensor
        if tensor.grad_fn is not None:
            self.quiet += 1
            try:
                saved = tensor.detach()
            finally:
                self.quiet -= 1
        self.guarded(self._saved, saved)
        return saved

    @staticmethod
    def _unpack(tensor):
        return tensor

    def _saved(self, tensor):
        site, stack = self.sites.current()
        record, _ = self.storages.see(tensor, site, stack, self.category_for_unseen(tensor))
        if record is not None and not isinstance(tensor, torch.nn.Parameter):
            self.storages.set_category(record, "activation", only_from=(_UNKNOWN, _TEMPORARY))

    # Temporaries: memory born while autograd runs a backward pass.
    def _hook_backward(self):
        original_backward, original_grad = torch.autograd.backward, torch.autograd.grad

        def run(original, roots, args, kwargs):
            if self.active:
                for t in roots if isinstance(roots, (list, tuple)) else (roots,):
                    if isinstance(t, torch.Tensor):
                        self.backward_sites.used(t)
            self._backward += 1
            try:
                return original(*args, **kwargs)
            finally:
                self._backward -= 1
                if not self._backward:
                    self.backward_sites.reset()

        def backward(*args, **kwargs):
            return run(original_backward, args[0] if args else kwargs.get("tensors"), args, kwargs)

        def grad(*args, **kwargs):
            return run(original_grad, args[0] if args else kwargs.get("outputs"), args, kwargs)

        torch.autograd.backward, torch.autograd.grad = backward, grad
        self._undo.append(lambda: (setattr(torch.autograd, "backward", original_backward),
                                   setattr(torch.autograd, "grad", original_grad)))

    # A tensor an op hands back through the dispatch mode keeps its Python object while C++
    # holds it, and freeing that object takes the GIL. A gloo worker thread that drops the
    # last reference to a collective's tensor just after the work completes then waits for
    # the GIL, while the main thread, holding it, destroys the process group and joins that
    # worker (PyTorch 1.13's ~ProcessGroupGloo): a deadlock at the program's end. Before a
    # process group is destroyed, the GIL is let go a moment so the workers finish.
    def _hook_process_groups(self):
        dist = getattr(torch, "distributed", None)
        destroy = getattr(dist, "destroy_process_group", None) if dist is not None and dist.is_available() else None
        if destroy is None:
            return

        def destroy_process_group(*args, **kwargs):
            time.sleep(0.05)
            return destroy(*args, **kwargs)

        dist.destroy_process_group = destroy_process_group
        self._undo.append(lambda: setattr(dist, "destroy_process_group", destroy))

    # Steps: after each optimizer step, its parameters, gradients and state get their
    # roles, then the step boundary is written.
    def _hook_optimizers(self):
        register = getattr(getattr(torch.optim, "optimizer", None), "register_optimizer_step_post_hook", None)
        if register is not None:
            handle = register(lambda opt, args, kwargs: self.guarded(self.optimizer_stepped, opt))
            self._undo.append(handle.remove)
            return
        # PyTorch before 2.0 has no global hook: each optimizer class's step is wrapped
        # when one is made (user-defined classes included).
        original_init = torch.optim.Optimizer.__init__
        wrapped = []

        def init(opt, *args, **kwargs):
            original_init(opt, *args, **kwargs)
            cls = type(opt)
            if not getattr(cls.step, "_memlens_wrapped", False):
                step = cls.step

                def stepped(o, *a, **k):
                    result = step(o, *a, **k)
                    current = Recording.current
                    if current is not None:
                        current.guarded(current.optimizer_stepped, o)
                    return result

                stepped._memlens_wrapped = True
                stepped.__wrapped__ = step
                cls.step = stepped
                wrapped.append((cls, step))

        torch.optim.Optimizer.__init__ = init

        def undo():
            torch.optim.Optimizer.__init__ = original_init
            for cls, step in wrapped:
                cls.step = step

        self._undo.append(undo)

    def optimizer_stepped(self, optimizer):
        if not self.active:
            return
        site, stack = self.sites.current()
        see, set_category = self.storages.see, self.storages.set_category
        for group in optimizer.param_groups:
            for p in group["params"]:
                set_category(see(p, site, stack, CATEGORY["parameter"])[0], "parameter")
                if p.grad is not None:
                    set_category(see(p.grad, site, stack, CATEGORY["gradient"])[0], "gradient")
                for value in optimizer.state.get(p, {}).values():
                    if isinstance(value, torch.Tensor):
                        set_category(see(value, site, stack, CATEGORY["optimizer_state"])[0], "optimizer_state")
        self.step()

    def out_of_memory(self, device, requested):
        """An op failed for want of memory (its exception goes on to the program)."""
        if self.active:
            site, stack = self.sites.current()
            self.abi.memlens_abi_oom(device, requested, site, stack)

    def step(self):
        if self.active:
            self.storages.poll()
            self.steps += 1
            self.abi.memlens_abi_step(self.steps)

    def scope(self, name, begin):
        if self.active:
            self.abi.memlens_abi_scope(name.encode(), 1 if begin else 0)

    def close(self):
        """Ends the recording: what is alive now stays alive in the trace (a leak, if the
        program still held it when its main code ended)."""
        if Recording.current is not self:
            return
        self.storages.poll()
        self.active = False
        self._mode.__exit__(None, None, None)
        self._saved_hooks.__exit__(None, None, None)
        for undo in reversed(self._undo):
            undo()
        self.storages.close()
        Recording.current = None
        if self.allocator_history.close(self.abi, self.path) != 0:
            raise RuntimeError("memlens: writing %s: %s" % (self.path, self.abi.memlens_abi_error().decode(errors="replace")))
