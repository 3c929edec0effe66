#pragma once
// What an allocator tells its observers: every segment and block change, each failed
// attempt and OOM. Statistics and (later) the trace recorder are observers.
#include <cstddef>
#include <cstdint>

#include "memlens/runtime/stream.hpp"

namespace memlens {

enum class Pool : std::uint8_t { Small, Large };

struct AllocatorEvent {
  enum class Kind : std::uint8_t {
    SegmentAlloc,   // a segment (or an expandable segment's new pages) came from the source
    SegmentFree,    // ... went back to it
    SegmentAllocFailed,  // the source refused a segment (every failed attempt, before any retry)
    Alloc,          // a block was handed out
    FreeRequested,  // the program freed a block (it may wait for recorded streams)
    FreeCompleted,  // the block is back in its pool
    AllocRetry,     // the allocator freed its cache and retried
    Oom,            // a request failed for good
  };
  Kind kind;
  Pool pool = Pool::Large;
  std::uintptr_t address = 0;
  std::uintptr_t segment = 0;  // Alloc: the segment the block was carved from
  std::int64_t size = 0;       // bytes of the block or segment (rounded), or a delta
  std::int64_t requested = 0;  // bytes the caller asked for
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
