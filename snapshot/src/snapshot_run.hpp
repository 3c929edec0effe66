#pragma once
// A PyTorch snapshot between the importer's two halves: every trace entry and annotation
// in time order, and each device's state at the first entry. The document reader
// (snapshot_reader.cpp) makes one from the document; the event writer
// (snapshot_events.cpp) turns it into trace events.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "memlens/common/event_kinds.hpp"
#include "memlens/snapshot/py_document.hpp"
#include "memlens/trace/trace_format.hpp"

namespace memlens::snapshot {

inline constexpr std::uint64_t kSmallSegmentBytes = 2u << 20;  // PyTorch's small pool grows in 2 MiB segments

enum class Action : std::uint8_t { SegmentAlloc, SegmentFree, Alloc, FreeRequested, FreeCompleted, Oom, Begin, End, Other };

// One trace entry or annotation, in the merged timeline: 48 bytes, one per entry.
struct Entry {
  std::uint64_t time_us = 0;
  std::uint64_t addr = 0, size = 0;
  std::uint64_t extra = 0;  // oom: the device's free bytes; annotation: its name's index
  const PyValue* frames = nullptr;
  std::uint32_t order = 0;   // position in the file: ties keep it
  std::uint16_t stream = 0;  // memlens' small stream number
  Action action = Action::Other;
  std::uint8_t device = 0;
};
static_assert(sizeof(Entry) == 48);

struct Block {
  std::uint64_t size = 0;
  const PyValue* frames = nullptr;
};

// What one device holds: segments as address ranges, blocks by address.
struct DeviceState {
  std::map<std::uint64_t, std::uint64_t> segments;  // start -> size
  std::unordered_map<std::uint64_t, Block> blocks;
  std::map<std::uint64_t, bool> small_pool;  // dump segments' start -> small
  std::uint64_t allocated = 0, reserved = 0;

  // Removes [a, a+n) from the ranges, splitting one that holds it (expandable segments).
  void erase_range(std::uint64_t a, std::uint64_t n) {
    auto it = segments.upper_bound(a);
    if (it == segments.begin()) return;
    --it;
    std::uint64_t start = it->first, end = start + it->second;
    if (a >= end) return;
    segments.erase(it);
    if (start < a) segments[start] = a - start;
    if (a + n < end) segments[a + n] = end - (a + n);
  }
  std::uint64_t segment_of(std::uint64_t a) const {
    auto it = segments.upper_bound(a);
    if (it == segments.begin()) return 0;
    --it;
    return a < it->first + it->second ? it->first : 0;
  }
  Pool pool_of(std::uint64_t a, std::uint64_t size) const {
    auto it = small_pool.upper_bound(a);
    bool small = it != small_pool.begin() ? std::prev(it)->second : size == kSmallSegmentBytes;
    return small ? Pool::Small : Pool::Large;
  }
};

struct SnapshotRun {
  std::vector<Entry> entries;        // in time order, ties in file order
  std::vector<DeviceState> devices;  // each device's pools, with no segment or block yet
  std::vector<DeviceState> start;    // each device's state at the first entry
  std::vector<std::string> names;    // annotations' names, by Entry::extra
  profiler::TraceHeader header;
  std::uint64_t first_us = 0;      // the first entry's time: the trace's zero
  std::uint64_t entries_read = 0;  // trace entries read, every device
  std::uint64_t skipped = 0;       // entries of actions memlens does not map
};

// Reads and checks the document; throws SnapshotError naming the place in the document
// ("device_traces[0][3].addr: missing (expected an int)"). `source` names the program.
// The run points into `root`'s frame lists: `root` outlives it.
SnapshotRun read_snapshot_run(const PyValue& root, const std::string& source);

}  // namespace memlens::snapshot
