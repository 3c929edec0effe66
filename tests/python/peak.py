# Memory of a known shape, for the trace's peak and final figures: the test works out the
# peak from the sizes below; the program itself sums what it still holds at its end by
# asking the garbage collector for every tensor (each storage once).
import gc

import torch


def held_bytes():
    storages = {}
    for o in gc.get_objects():
        if isinstance(o, torch.Tensor):
            s = o.untyped_storage() if hasattr(o, "untyped_storage") else o.storage()
            storages[s.data_ptr()] = s.nbytes()
    return sum(storages.values())


kept = []
a = torch.ones(1000)               # 4,000 bytes
b = torch.ones(2000)               # 8,000
c = a + b[:1000]                   # 4,000: 16,000 live
del a
d = torch.cat([b, c, b])           # 20,000: 32,000 live, the peak
kept.append(d[:10])                # a view: d's storage stays
del b, c, d
e = torch.ones(500, dtype=torch.float64)  # 4,000: 24,000 live
kept.append(e)
del e
print("held at the end:", held_bytes())
