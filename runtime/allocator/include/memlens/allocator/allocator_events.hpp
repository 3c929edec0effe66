#pragma once
// What an allocator tells its observers: every segment and block change, each failed
// attempt, retry and OOM, in the trace's own kinds (memlens/common/event_kinds.hpp).
// Statistics and the trace recorder are observers.
#include <cstddef>
#include <cstdint>

#include "memlens/common/event_kinds.hpp"
#include "memlens/allocator/stream.hpp"

namespace memlens {

struct AllocatorEvent {
  // SegmentAlloc, SegmentFree, AllocFailed (the source refused a segment: every failed
  // attempt, before any retry), Alloc, FreeRequested, FreeCompleted, AllocRetry, Oom.
  EventKind kind;
  Pool pool = Pool::Large;
  std::uintptr_t address = 0;
  std::uintptr_t segment = 0;  // Alloc: the segment the block was carved from
  std::int64_t size = 0;       // bytes of the block or segment (rounded), or a delta
  std::int64_t requested = 0;  // bytes the caller asked for
  // Alloc, FreeRequested, FreeCompleted: the storage that owns the block (the `owner`
  // given to allocate), 0 for none.
  std::uint64_t storage = 0;
  // Alloc and FreeCompleted: how the free pieces of split segments changed (PyTorch's
  // inactive_split statistics), as deltas of their count and bytes.
  std::int64_t split_count = 0, split_bytes = 0;
  StreamId stream = kDefaultStream;
  // Oom only: the device's state when it failed.
  std::int64_t device_free = 0, reserved = 0, allocated = 0, largest_free_block = 0;
};

class AllocatorObserver {
 public:
  virtual ~AllocatorObserver() = default;
  // Called with the allocator's lock held: keep it short, never call back into it.
  virtual void on_event(const AllocatorEvent& e) = 0;
};

}  // namespace memlens
