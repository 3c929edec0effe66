#pragma once
// The interface tensors allocate through. Implementations: CachingAllocator (sim, cuda)
// and DirectAllocator (cpu). Each reports every change to its observers; its statistics
// come from one of them.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "memlens/allocator/allocator_events.hpp"
#include "memlens/allocator/allocator_stats.hpp"
#include "memlens/allocator/device.hpp"
#include "memlens/allocator/spin_lock.hpp"
#include "memlens/allocator/stream.hpp"

namespace memlens {

struct BlockSnapshot {
  enum class State : std::uint8_t { Allocated, PendingFree, Free };
  std::uintptr_t address;
  std::size_t size;
  std::size_t requested;  // 0 when free
  State state;
};

struct SegmentSnapshot {
  std::uintptr_t address;
  std::size_t size;
  StreamId stream;
  Pool pool;
  bool expandable;
  std::vector<BlockSnapshot> blocks;  // in address order, covering the segment
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Throws OutOfMemoryError when the device cannot give `bytes`. `owner` (a storage id, 0
  // for none) is carried by the block's Alloc, FreeRequested and FreeCompleted events.
  virtual void* allocate(std::size_t bytes, StreamId stream = kDefaultStream, std::uint64_t owner = 0) = 0;
  virtual void deallocate(void* ptr) = 0;
  // The block at `ptr` is also used by work on `stream`: do not reuse it before that
  // work has completed.
  virtual void record_stream(void* ptr, StreamId stream) = 0;
  // Returns cached, unused segments to the device.
  virtual void empty_cache() = 0;
  virtual std::vector<SegmentSnapshot> snapshot() const = 0;
  virtual Device device() const = 0;
  // Bytes the device can hold (SIZE_MAX when unbounded, as for the host).
  virtual std::uint64_t capacity() const = 0;
  // The active configuration, parseable ("" for an allocator without knobs).
  virtual std::string config_string() const = 0;

  AllocatorStats stats() const;
  void reset_peak_stats();
  // Observers see every event from now on (not owned; remove before destroying).
  void add_observer(AllocatorObserver* o);
  void remove_observer(AllocatorObserver* o);

 protected:
  // Called by implementations with `mu_` held.
  void notify(const AllocatorEvent& e);
  // The statistics, read with `mu_` already held.
  const AllocatorStats& stats_locked() const { return stats_.stats(); }
  mutable SpinLock mu_;

 private:
  StatsObserver stats_;
  std::vector<AllocatorObserver*> observers_;
};

// The allocator serving a resolved device (cpu or sim); created on first use.
Allocator& allocator_for(const Device& resolved);
// Every device this process can allocate on, in a fixed order (cpu, sim:0, each CUDA
// device the backend serves, then cuda_host, as PyTorch's snapshots list host memory): the recorder lists them in a trace's
// header, where the index is the events' device, and observes each one's allocator.
std::vector<Device> allocatable_devices();

}  // namespace memlens
