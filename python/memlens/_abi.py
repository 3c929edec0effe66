"""The recorder's C ABI (libmemlens_record_abi.so), loaded with ctypes.

ctypes rather than a compiled extension: the same library serves every Python (Debian's
3.11 in CI, a 3.12 venv on a GPU machine) without being built against its headers, and
the trace file keeps one writer, memlens' own C++ TraceWriter.
"""
import ctypes
import os

ABI_VERSION = 4
_LIBRARY = "libmemlens_record_abi.so"


def _candidates():
    env = os.environ.get("MEMLENS_RECORD_ABI")
    if env:
        yield env
    here = os.path.dirname(os.path.abspath(__file__))
    # Installed: PREFIX/lib/python3/dist-packages/memlens -> PREFIX/lib and the multiarch libdir.
    prefix = os.path.normpath(os.path.join(here, "..", "..", "..", ".."))
    for libdir in ("lib", os.path.join("lib", "x86_64-linux-gnu"), os.path.join("lib", "aarch64-linux-gnu"), "lib64"):
        yield os.path.join(prefix, libdir, _LIBRARY)
    yield _LIBRARY  # the loader's own search path


_loaded = None


def load():
    """The library (loaded once per process)."""
    global _loaded
    if _loaded is None:
        _loaded = _find()
    return _loaded


def loaded_path():
    return _loaded._name if _loaded is not None else None


def _find():
    tried = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path)
            continue
        try:
            # PyDLL: calls keep the GIL. They are short and never call back into Python,
            # so dropping and taking the GIL again at each would only cost time, and would
            # let another thread run in the middle of one of the recorder's steps.
            lib = ctypes.PyDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        return _declare(lib, path)
    raise RuntimeError("memlens: cannot find %s (set MEMLENS_RECORD_ABI, or run through `memlens record`); tried: %s"
                       % (_LIBRARY, "; ".join(tried)))


def _declare(lib, path):
    u8, u32, u64, i64, c_int, c_char_p = (ctypes.c_uint8, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int64,
                                           ctypes.c_int, ctypes.c_char_p)
    dims = ctypes.POINTER(i64)
    signatures = {
        "memlens_abi_version": (c_int, []),
        "memlens_abi_error": (c_char_p, []),
        "memlens_abi_open": (c_int, [c_char_p, c_char_p, c_char_p, c_char_p]),
        "memlens_abi_close": (c_int, []),
        "memlens_abi_close_with_allocator_trace": (c_int, [c_char_p]),
        "memlens_abi_string": (u32, [c_char_p]),
        "memlens_abi_site": (u32, [c_char_p, u32, c_char_p]),
        "memlens_abi_stack": (u32, [ctypes.POINTER(u32), c_int]),
        "memlens_abi_storage_alloc": (None, [u8, u64, u64, u64, u8, u32, u32]),
        "memlens_abi_storage_free": (None, [u8, u64, u64, u64]),
        "memlens_abi_category": (None, [u8, u64, u8]),
        "memlens_abi_op": (None, [u32, u32, u64, u64, c_int, c_int, dims]),
        "memlens_abi_view": (None, [u8, u64, u64, i64, u8, u8, u32, dims]),
        "memlens_abi_copy": (None, [u8, u64, u8, u64, u64, u8, u32]),
        "memlens_abi_oom": (None, [u8, u64, u32, u32]),
        "memlens_abi_step": (None, [u64]),
        "memlens_abi_scope": (None, [c_char_p, c_int]),
        "memlens_abi_now_ns": (u64, []),
    }
    for name, (restype, argtypes) in signatures.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = restype, argtypes
    version = lib.memlens_abi_version()
    if version != ABI_VERSION:
        raise RuntimeError("memlens: %s speaks ABI version %d, this package %d" % (path, version, ABI_VERSION))
    return lib


def dims_array(values):
    """A flat list of int64 (ranks and sizes) as the ABI's dims argument."""
    return (ctypes.c_int64 * len(values))(*values)
