#include "memlens/allocator/caching_host_allocator.hpp"

#include <algorithm>
#include <bit>

#include "memlens/allocator/errors.hpp"
#include "memlens/allocator/memory.hpp"

namespace memlens {

namespace {
// Host memory has no pools; its blocks are counted as large-pool ones.
constexpr Pool kHostPool = Pool::Large;
}  // namespace

CachingHostAllocator::CachingHostAllocator(std::unique_ptr<MemorySource> source, StreamEvents* events)
    : source_(std::move(source)), events_(events) {}

CachingHostAllocator::~CachingHostAllocator() {
  for (auto& [p, b] : live_) source_->release(p, b.size);
  for (auto& [size, p] : cached_) source_->release(p, size);
  for (auto& f : pending_) source_->release(f.ptr, f.block.size);
}

std::size_t CachingHostAllocator::round_size(std::size_t bytes) { return std::bit_ceil(std::max(bytes, kMinBlockSize)); }

void* CachingHostAllocator::allocate(std::size_t bytes, StreamId stream, std::uint64_t owner) {
  const std::size_t size = round_size(bytes);
  const auto sz = static_cast<std::int64_t>(size);
  void* p = nullptr;
  {
    std::lock_guard lock(mu_);
    complete_finished_frees();
    if (auto it = cached_.find(size); it != cached_.end()) {
      p = it->second;
      cached_.erase(it);
    }
  }
  const bool fresh = p == nullptr;
  if (fresh) p = source_->acquire(size);
  std::lock_guard lock(mu_);
  if (!p) {
    auto free = static_cast<std::int64_t>(source_->available());
    std::int64_t allocated = stats_locked().allocated_bytes.all.current;
    std::int64_t reserved = stats_locked().reserved_bytes.all.current;
    notify({.kind = EventKind::Oom,
            .pool = kHostPool,
            .size = sz,
            .requested = static_cast<std::int64_t>(bytes),
            .stream = stream,
            .device_free = free,
            .reserved = reserved,
            .allocated = allocated});
    throw OutOfMemoryError(device().str() + " out of memory. Tried to allocate " + format_bytes(sz) + " of pinned memory. " +
                           format_bytes(reserved) + " is reserved for pinned memory, " + format_bytes(allocated) +
                           " of it allocated by tensors.");
  }
  auto addr = reinterpret_cast<std::uintptr_t>(p);
  live_.emplace(p, Block{size, bytes, owner, stream, {}});
  if (fresh) notify({.kind = EventKind::SegmentAlloc, .pool = kHostPool, .address = addr, .size = sz, .stream = stream});
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

void CachingHostAllocator::deallocate(void* ptr) {
  std::lock_guard lock(mu_);
  auto it = live_.find(ptr);
  if (it == live_.end()) return;
  Block b = it->second;
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
  if (b.used_by.empty() || !events_) {
    cache_freed(ptr, b);
    return;
  }
  PendingFree f{ptr, b, {}};
  for (StreamId s : b.used_by) f.markers.emplace_back(s, events_->record(s));
  pending_.push_back(std::move(f));
}

void CachingHostAllocator::record_stream(void* ptr, StreamId stream) {
  std::lock_guard lock(mu_);
  auto it = live_.find(ptr);
  if (it == live_.end() || !events_) return;
  auto& used = it->second.used_by;
  if (std::find(used.begin(), used.end(), stream) == used.end()) used.push_back(stream);
}

void CachingHostAllocator::cache_freed(void* ptr, const Block& b) {
  notify({.kind = EventKind::FreeCompleted,
          .pool = kHostPool,
          .address = reinterpret_cast<std::uintptr_t>(ptr),
          .size = static_cast<std::int64_t>(b.size),
          .storage = b.owner,
          .stream = b.stream});
  cached_.emplace(b.size, ptr);
}

void CachingHostAllocator::complete_finished_frees() {
  std::erase_if(pending_, [&](const PendingFree& f) {
    for (auto& [s, marker] : f.markers)
      if (!events_->query(s, marker)) return false;
    cache_freed(f.ptr, f.block);
    return true;
  });
}

void CachingHostAllocator::empty_cache() {
  std::multimap<std::size_t, void*> released;
  {
    std::lock_guard lock(mu_);
    complete_finished_frees();
    released.swap(cached_);
    for (auto& [size, p] : released)
      notify({.kind = EventKind::SegmentFree,
              .pool = kHostPool,
              .address = reinterpret_cast<std::uintptr_t>(p),
              .size = static_cast<std::int64_t>(size)});
  }
  for (auto& [size, p] : released) source_->release(p, size);
}

std::vector<SegmentSnapshot> CachingHostAllocator::snapshot() const {
  std::lock_guard lock(mu_);
  std::vector<SegmentSnapshot> out;
  for (auto& [p, b] : live_) {
    auto addr = reinterpret_cast<std::uintptr_t>(p);
    out.push_back({addr, b.size, b.stream, kHostPool, false, {{addr, b.size, b.requested, BlockSnapshot::State::Allocated}}});
  }
  for (auto& [size, p] : cached_) {
    auto addr = reinterpret_cast<std::uintptr_t>(p);
    out.push_back({addr, size, kDefaultStream, kHostPool, false, {{addr, size, 0, BlockSnapshot::State::Free}}});
  }
  for (auto& f : pending_) {
    auto addr = reinterpret_cast<std::uintptr_t>(f.ptr);
    out.push_back({addr,
                   f.block.size,
                   f.block.stream,
                   kHostPool,
                   false,
                   {{addr, f.block.size, f.block.requested, BlockSnapshot::State::PendingFree}}});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.address < b.address; });
  return out;
}

}  // namespace memlens
