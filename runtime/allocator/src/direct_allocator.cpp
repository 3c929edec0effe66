#include "memlens/allocator/direct_allocator.hpp"

#include <algorithm>

#include "memlens/allocator/errors.hpp"
#include "memlens/allocator/memory.hpp"

namespace memlens {

namespace {
// The host has no pools; its blocks are counted as large-pool ones.
constexpr Pool kHostPool = Pool::Large;
}  // namespace

DirectAllocator::DirectAllocator(std::unique_ptr<MemorySource> source) : source_(std::move(source)) {}

DirectAllocator::~DirectAllocator() {
  for (auto& [p, b] : live_) source_->release(p, b.size);
}

void* DirectAllocator::allocate(std::size_t bytes, StreamId stream, std::uint64_t owner) {
  std::size_t size = std::max<std::size_t>(kRound, (bytes + kRound - 1) / kRound * kRound);
  void* p = source_->acquire(size);
  std::lock_guard lock(mu_);
  auto addr = reinterpret_cast<std::uintptr_t>(p);
  auto sz = static_cast<std::int64_t>(size);
  if (!p) {
    auto cap = static_cast<std::int64_t>(source_->capacity());
    auto free = static_cast<std::int64_t>(source_->available());
    std::int64_t allocated = stats_locked().allocated_bytes.all.current;
    notify({.kind = EventKind::Oom,
            .pool = kHostPool,
            .size = sz,
            .requested = static_cast<std::int64_t>(bytes),
            .stream = stream,
            .device_free = free,
            .reserved = allocated,
            .allocated = allocated});
    throw OutOfMemoryError(device().str() + " out of memory. Tried to allocate " + format_bytes(sz) +
                           ". Device has a total capacity of " + format_bytes(cap) + " of which " + format_bytes(free) +
                           " is free. " + format_bytes(allocated) + " is allocated by tensors.");
  }
  live_.emplace(p, Block{size, bytes, owner, stream});
  notify({.kind = EventKind::SegmentAlloc, .pool = kHostPool, .address = addr, .size = sz, .stream = stream});
  notify({.kind = EventKind::Alloc,
          .pool = kHostPool,
          .address = addr,
          .segment = addr,
          .size = sz,
          .requested = static_cast<std::int64_t>(bytes),
          .storage = owner,
          .stream = stream});
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
    auto addr = reinterpret_cast<std::uintptr_t>(ptr);
    auto sz = static_cast<std::int64_t>(b.size);
    notify({.kind = EventKind::FreeRequested,
            .pool = kHostPool,
            .address = addr,
            .size = sz,
            .requested = static_cast<std::int64_t>(b.requested),
            .storage = b.owner,
            .stream = b.stream});
    notify({.kind = EventKind::FreeCompleted,
            .pool = kHostPool,
            .address = addr,
            .size = sz,
            .storage = b.owner,
            .stream = b.stream});
    notify({.kind = EventKind::SegmentFree, .pool = kHostPool, .address = addr, .size = sz, .stream = b.stream});
  }
  source_->release(ptr, b.size);
}

std::vector<SegmentSnapshot> DirectAllocator::snapshot() const {
  std::lock_guard lock(mu_);
  std::vector<SegmentSnapshot> out;
  for (auto& [p, b] : live_) {
    auto addr = reinterpret_cast<std::uintptr_t>(p);
    out.push_back({addr, b.size, b.stream, kHostPool, false, {{addr, b.size, b.requested, BlockSnapshot::State::Allocated}}});
  }
  return out;
}

}  // namespace memlens
