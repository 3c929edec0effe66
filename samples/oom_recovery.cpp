// Running out of device memory through fragmentation, and recovering. Requests of 1 to
// 10 MiB share 20 MiB segments (PyTorch's caching policy), so the sample fills the device
// with 6 MiB tensors, three to a segment, then frees two of every three. Two thirds of
// the memory is now free, but every segment still holds one live tensor, so none can be
// returned to the device and a 64 MiB request fails: the message says how much is
// reserved but unallocated and how large the largest free block is. The sample frees the
// rest, empties the cache and gets its 64 MiB. `memlens fragmentation` shows both OOMs;
// `memlens replay TRACE --alloc-conf expandable_segments:True` tries the other policy.
#include <cstdio>
#include <vector>

#include <memlens/runtime.hpp>

using namespace memlens;

int main() try {
  Device dev("cuda");
  const std::int64_t floats_6mib = std::int64_t{6} << 18, floats_64mib = std::int64_t{64} << 18;
  std::vector<Tensor> held;
  try {
    for (;;) held.push_back(empty({floats_6mib}, TensorOptions().device(dev)));  // empty(): no page is touched
  } catch (const OutOfMemoryError&) {
    std::printf("oom_recovery: the device is full after %zu tensors of 6 MiB (%s reserved)\n", held.size(),
                format_bytes(memory_reserved(dev)).c_str());
  }
  for (std::size_t i = 0; i < held.size(); ++i)
    if (i % 3 != 0) held[i] = Tensor();
  std::printf("oom_recovery: freed two of every three: %s allocated, %s reserved\n",
              format_bytes(memory_allocated(dev)).c_str(), format_bytes(memory_reserved(dev)).c_str());
  try {
    Tensor big = empty({floats_64mib}, TensorOptions().device(dev));
    std::printf("oom_recovery: 64 MiB fitted (nothing was fragmented)\n");
  } catch (const OutOfMemoryError& e) {
    std::printf("oom_recovery: caught: %s\n", e.what());
  }
  held.clear();
  empty_cache(dev);
  Tensor big = empty({floats_64mib}, TensorOptions().device(dev));
  std::printf("oom_recovery: after freeing the rest and empty_cache(), 64 MiB fit: %s allocated, %s reserved\n",
              format_bytes(memory_allocated(dev)).c_str(), format_bytes(memory_reserved(dev)).c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "oom_recovery: error: %s\n", e.what());
  return 1;
}
