#include <algorithm>
#include <memory>

#include "memlens/runtime/allocator.hpp"
#include "memlens/runtime/errors.hpp"
#include "memlens/runtime/memory.hpp"

namespace memlens {

void StatCounter::increase(std::int64_t n) {
  current += n;
  allocated += n;
  peak = std::max(peak, current);
}

void StatCounter::decrease(std::int64_t n) {
  current -= n;
  freed += n;
}

DirectAllocator::DirectAllocator(std::unique_ptr<MemorySource> source) : source_(std::move(source)) {}

void* DirectAllocator::allocate(std::size_t bytes) {
  std::size_t size = std::max<std::size_t>(kRound, (bytes + kRound - 1) / kRound * kRound);
  void* p = source_->acquire(size);
  std::lock_guard lock(mu_);
  if (!p) {
    ++stats_.num_ooms;
    auto cap = source_->capacity();
    auto used = source_->used();
    throw OutOfMemoryError(device().str() + " out of memory. Tried to allocate " +
                           format_bytes(static_cast<std::int64_t>(size)) + ". Device has a total capacity of " +
                           format_bytes(static_cast<std::int64_t>(cap)) + " of which " +
                           format_bytes(static_cast<std::int64_t>(cap - used)) + " is free. " +
                           format_bytes(stats_.allocated_bytes.current) + " is allocated by tensors.");
  }
  live_.emplace(p, Block{size, bytes});
  ++stats_.num_device_alloc;
  stats_.allocation.increase(1);
  stats_.segment.increase(1);
  stats_.allocated_bytes.increase(static_cast<std::int64_t>(size));
  stats_.reserved_bytes.increase(static_cast<std::int64_t>(size));
  stats_.requested_bytes.increase(static_cast<std::int64_t>(bytes));
  return p;
}

void DirectAllocator::deallocate(void* ptr) {
  Block b;
  {
    std::lock_guard lock(mu_);
    auto it = live_.find(ptr);
    if (it == live_.end()) return;
    b = it->second;
    live_.erase(it);
    ++stats_.num_device_free;
    stats_.allocation.decrease(1);
    stats_.segment.decrease(1);
    stats_.allocated_bytes.decrease(static_cast<std::int64_t>(b.size));
    stats_.reserved_bytes.decrease(static_cast<std::int64_t>(b.size));
    stats_.requested_bytes.decrease(static_cast<std::int64_t>(b.requested));
  }
  source_->release(ptr, b.size);
}

AllocatorStats DirectAllocator::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void DirectAllocator::reset_peak_stats() {
  std::lock_guard lock(mu_);
  for (StatCounter* c : {&stats_.allocation, &stats_.allocated_bytes, &stats_.requested_bytes, &stats_.segment,
                         &stats_.reserved_bytes})
    c->reset_peak();
}

Allocator& allocator_for(const Device& resolved) {
  // Process-lifetime allocators: tensors in static storage may outlive main().
  static Allocator* cpu = new DirectAllocator(std::make_unique<HostSource>());
  switch (resolved.type()) {
    case DeviceType::CPU: return *cpu;
    case DeviceType::Sim: {
      static Allocator* sim = new DirectAllocator(std::make_unique<SimSource>(sim_capacity_from_env()));
      return *sim;
    }
    case DeviceType::CUDA: break;
  }
  throw DeviceError("no allocator for device " + resolved.str() + " (the CUDA backend is not built)");
}

}  // namespace memlens
