// Fuzz target: the pickle reader of PyTorch snapshots. Any bytes end in a PickleError or
// a document: never a crash, a hang, code run, or memory beyond a few values per byte.
#include <memlens/snapshot/pickle.hpp>

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace memlens::snapshot;
  try {
    PickleDocument doc(std::string_view(reinterpret_cast<const char*>(data), size));
    std::size_t n = doc.value_count();
    if (const PyValue* traces = doc.root().get("device_traces"))
      for (const PyValue* device : traces->items) n += device->size();
    volatile std::size_t keep = n;  // keeps the work from being optimised away
    (void)keep;
  } catch (const PickleError&) {
  }
  return 0;
}
