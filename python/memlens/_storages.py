"""Storage lifetimes, as the dispatch mode sees tensors.

A storage is born when a tensor on memory not seen before comes out of an op (or first
goes into one: memory made before the recording, or by a path the mode does not see,
such as torch.from_numpy, is adopted there, as an input). It stays alive while any
tensor object the recorder has seen on it is alive; when the last one dies (seen at the
recorder's next event: a weak reference's callback only queues it, running no Python
code inside PyTorch's destructors, which may hold locks other threads wait on), a weak
reference to the storage itself (PyTorch's StorageWeakRef) says whether C++ still holds
it (a gradient in `.grad`, an output autograd saved): if so it is polled until it
expires. So a free is written when the memory is really given back, not when Python
drops a name.
"""
import collections
import weakref

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from ._vocabulary import CATEGORY


# A tensor's untyped storage: untyped_storage() from PyTorch 2.0 on; before it, _storage()
# (storage() would wrap it in a TypedStorage first, at 7x the cost).
_storage_of = getattr(torch.Tensor, "untyped_storage", None) or torch.Tensor._storage


def trace_devices(torch):
    """The devices a recording lists, in order (the events' device numbers): the CPU, then
    each CUDA device, counted without starting CUDA. The numbers are keyed by torch.device,
    as a tensor's `.device` says it (one dict lookup per tensor)."""
    names = ["cpu"] + ["cuda:%d" % i for i in range(torch.cuda.device_count())]
    numbers = {torch.device("cpu"): 0}
    numbers.update({torch.device("cuda", i): 1 + i for i in range(len(names) - 1)})
    return names, numbers


class Storage:
    __slots__ = ("id", "device", "address", "bytes", "ref", "tensors", "category")

    def __init__(self, sid, device, address, nbytes, ref, category):
        self.id, self.device, self.address, self.bytes = sid, device, address, nbytes
        self.ref, self.tensors, self.category = ref, 0, category


class Storages:
    def __init__(self, abi, devices):
        self._abi = abi
        self._devices = devices  # torch.device -> the trace's device number
        self._live = {}  # (device index, address) -> Storage
        self._held = {}  # id(tensor) -> key, for the tensor objects watched
        self._suspects = set()  # keys whose tensors are gone but whose storage may live on
        self._next_id = 1
        self.on_release = None  # called with id(tensor) when a held tensor object dies
        self._refs = {}  # id(weak reference) -> (the reference, id(tensor), key)
        self._dead = collections.deque()  # references whose tensor died, not yet released


    def see(self, tensor, site=0, stack=0, category=0, fresh=False):
        """The Storage `tensor` lives on (None for one of no bytes), born now if new; and
        `tensor` holds it from now on. `born` tells the caller whether it was new. A tensor
        object already held keeps its storage (one dict lookup), unless `fresh` says an op
        may have given it other memory (`set_`, `resize_`, an `out=` argument)."""
        if not fresh:
            record = self.held(tensor)
            if record is not None:
                return record, False
        device = self._devices.get(tensor.device)
        if device is None:  # meta tensors and devices the trace does not list hold no memory of theirs
            return None, False
        storage = _storage_of(tensor)
        nbytes = storage.nbytes()
        if nbytes == 0:
            return None, False
        key = (device, storage.data_ptr())
        record = self._live.get(key)
        born = False
        if record is not None and record.ref.expired():
            # The memory was given back and taken again by a new storage.
            self._free(key, record)
            record = None
        if record is None:
            record = Storage(self._next_id, device, key[1], nbytes, StorageWeakRef(storage), category)
            self._next_id += 1
            self._live[key] = record
            self._abi.memlens_abi_storage_alloc(device, key[1], nbytes, record.id, category, site, stack)
            born = True
        self._hold(tensor, key, record)
        return record, born

    def held(self, tensor):
        """The Storage of a tensor object seen before, else None."""
        if self._dead:
            self._release_dead()  # first: a dead object's id may be a new object's now
        key = self._held.get(id(tensor))
        return self._live.get(key) if key is not None else None

    def set_category(self, record, name, only_from=None):
        """Gives `record` the category `name` (unless it has one outside `only_from`)."""
        category = CATEGORY[name]
        if record is None or record.category == category:
            return
        if only_from is not None and record.category not in only_from:
            return
        record.category = category
        self._abi.memlens_abi_category(record.device, record.id, category)

    def _hold(self, tensor, key, record):
        tid = id(tensor)
        held = self._held.get(tid)
        if held == key:
            return
        if held is not None:  # the same object now on other memory (set_, a swapped .data)
            self._release(tid, held)
        self._held[tid] = key
        record.tensors += 1
        self._suspects.discard(key)
        # The callback is a builtin (deque.append): no Python code runs when the tensor dies.
        ref = weakref.ref(tensor, self._dead.append)
        self._refs[id(ref)] = (ref, tid, key)

    def _release_dead(self):
        dead = self._dead
        while dead:
            entry = self._refs.pop(id(dead.popleft()), None)
            if entry is not None:
                self._release(entry[1], entry[2])

    def _release(self, tid, key):
        if self._held.get(tid) != key:
            return
        del self._held[tid]
        if self.on_release is not None:
            self.on_release(tid)
        record = self._live.get(key)
        if record is None:
            return
        record.tensors -= 1
        if record.tensors == 0:
            if record.ref.expired():
                self._free(key, record)
            else:
                self._suspects.add(key)

    def poll(self):
        """Frees the storages whose last holder has let go: a tensor object in Python, or
        C++ (polled)."""
        if self._dead:
            self._release_dead()
        if not self._suspects:
            return
        # A copy: a release on another thread may change the set meanwhile.
        for key in list(self._suspects):
            record = self._live.get(key)
            if record is not None and record.ref.expired():
                self._free(key, record)

    def _free(self, key, record):
        if self._live.pop(key, None) is None:
            return  # freed already, on another thread
        self._suspects.discard(key)
        self._abi.memlens_abi_storage_free(record.device, record.address, record.bytes, record.id)

    def device_number(self, tensor):
        return self._devices.get(tensor.device, 0)

    def device_number_of(self, device):
        if device.index is None and device.type != "cpu":  # "cuda": the first
            device = torch.device(device.type, 0)
        return self._devices.get(device)

    def live(self):
        return list(self._live.values())

    def close(self):
        """Stops watching: tensors that die later are not released."""
        self._held.clear()
        self._refs.clear()
