"""Where an event happened: the innermost frame of the user's own code.

Frames of torch, of this package, of installed packages (site-packages, dist-packages)
and of the standard library are library code; the first frame outside them, walking
out from the event, is the user's line. The whole Python stack is kept beside it. Sites
and stacks are interned once per (code, line), so a loop pays a dict lookup, not a
string copy.
"""
import ctypes
import os
import sys
import sysconfig


def _library_roots():
    import torch
    roots = {os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.abspath(torch.__file__))}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(os.path.abspath(path))
    return tuple(sorted(r + os.sep for r in roots))


def _is_library(filename, roots):
    if filename.startswith("<"):
        return not filename.startswith("<string") and not filename.startswith("<stdin")
    if "site-packages" in filename or "dist-packages" in filename:
        return True
    return os.path.abspath(filename).startswith(roots)


class Sites:
    def __init__(self, abi, max_depth=64):
        self._abi = abi
        self._roots = _library_roots()
        self._max_depth = max_depth
        self._library_code = {}  # code object -> is library code
        self._frames = {}  # (code, line) -> site id
        self._stacks = {}  # tuple of site ids -> stack id
        self.override = None  # (site, stack) that events take instead, while set

    def _learn_library(self, code):
        library = self._library_code[code] = _is_library(code.co_filename, self._roots)
        return library

    def _site(self, code, line):
        site = self._frames[(code, line)] = self._abi.memlens_abi_site(
            code.co_filename.encode("utf-8", "surrogateescape"), line, code.co_name.encode("utf-8", "surrogateescape"))
        return site

    def current(self):
        """(site, stack) of the caller's user code: ids from the C ABI, 0 when none."""
        if self.override is not None:
            return self.override
        library_code, learn_library = self._library_code, self._learn_library
        frame = sys._getframe(1)
        # Library frames inside the op (torch's, this package's) are left out, a dict
        # lookup each; from the user's frame out, library frames (a Module's __call__)
        # are kept.
        while frame is not None:
            code = frame.f_code
            library = library_code.get(code)
            if library is None:
                library = learn_library(code)
            if not library:
                break
            frame = frame.f_back
        if frame is None:
            return 0, 0
        frames_get, site_of, frames = self._frames.get, self._site, []
        depth = self._max_depth
        while frame is not None and depth:
            key = (frame.f_code, frame.f_lineno)
            frames.append(frames_get(key) or site_of(*key))
            depth -= 1
            frame = frame.f_back
        key = tuple(frames)
        stack = self._stacks.get(key)
        if stack is None:
            ids = (ctypes.c_uint32 * len(frames))(*frames)
            stack = self._stacks[key] = self._abi.memlens_abi_stack(ids, len(frames))
        return frames[0], stack
