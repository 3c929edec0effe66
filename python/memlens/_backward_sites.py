"""Backward-pass memory at the forward line that made it.

Each op's outputs remember the site (and stack) of the op that made them. When an output
next goes into an op, or into backward() as a root, its grad_fn is known (autograd sets
it after the op): that node gets a pre-hook and a hook that make its site the current
one while it runs in the backward pass, so the gradients and temporaries it allocates
are sited at the forward line, stack and all. Nodes made by nothing the recorder saw
(a leaf's AccumulateGrad) leave the site to the user's frame, the backward() line.
"""
import torch


class BackwardSites:
    def __init__(self, sites):
        self._sites = sites
        self._made = {}  # id(tensor) -> (site, stack) of the op that made it, until its node is linked
        self._running = []  # (site, stack) of the nodes running now, innermost last

    def made(self, tensor, where):
        if torch.is_grad_enabled():
            self._made[id(tensor)] = where

    def forget(self, tensor_id):
        self._made.pop(tensor_id, None)

    def used(self, tensor):
        """`tensor` goes into an op (or into backward()): its node is linked once."""
        where = self._made.pop(id(tensor), None)
        if where is None:
            return
        node = tensor.grad_fn
        if node is None:
            return
        metadata = node.metadata
        if "memlens" in metadata:
            return
        metadata["memlens"] = where
        node.register_prehook(lambda grad_outputs: self._enter(where))
        node.register_hook(lambda grad_inputs, grad_outputs: self._leave())

    def _enter(self, where):
        self._running.append(where)
        self._sites.override = where

    def _leave(self):
        if self._running:
            self._running.pop()
        self._sites.override = self._running[-1] if self._running else None

    def reset(self):
        """After a backward pass (also one that raised): no node is running."""
        self._running.clear()
        self._sites.override = None
