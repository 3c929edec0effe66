#pragma once
// The allocator interface tensors allocate through, and the simple allocator that serves
// until the caching allocator arrives: one segment per block, nothing cached.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "memlens/runtime/memory_source.hpp"

namespace memlens {

// current / peak / allocated (cumulative) / freed (cumulative), as PyTorch's memory_stats.
struct StatCounter {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  std::int64_t allocated = 0;
  std::int64_t freed = 0;
  void increase(std::int64_t n);
  void decrease(std::int64_t n);
  void reset_peak() { peak = current; }
};

struct AllocatorStats {
  StatCounter allocation;        // count of live blocks
  StatCounter allocated_bytes;   // bytes of live blocks (rounded sizes)
  StatCounter requested_bytes;   // bytes the callers asked for
  StatCounter segment;           // count of segments held from the source
  StatCounter reserved_bytes;    // bytes of segments held from the source
  std::int64_t num_ooms = 0;
  std::int64_t num_device_alloc = 0;
  std::int64_t num_device_free = 0;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Throws OutOfMemoryError when the device cannot give `bytes`.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* ptr) = 0;
  virtual AllocatorStats stats() const = 0;
  virtual void reset_peak_stats() = 0;
  virtual void empty_cache() = 0;
  virtual Device device() const = 0;
};

class DirectAllocator final : public Allocator {
 public:
  explicit DirectAllocator(std::unique_ptr<MemorySource> source);
  void* allocate(std::size_t bytes) override;
  void deallocate(void* ptr) override;
  AllocatorStats stats() const override;
  void reset_peak_stats() override;
  void empty_cache() override {}
  Device device() const override { return source_->device(); }
  const MemorySource& source() const { return *source_; }

  static constexpr std::size_t kRound = 512;

 private:
  struct Block {
    std::size_t size;
    std::size_t requested;
  };
  std::unique_ptr<MemorySource> source_;
  mutable std::mutex mu_;
  std::map<void*, Block> live_;
  AllocatorStats stats_;
};

// The allocator serving a resolved device (cpu or sim); created on first use.
Allocator& allocator_for(const Device& resolved);

}  // namespace memlens
