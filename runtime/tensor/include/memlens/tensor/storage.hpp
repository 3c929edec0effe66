#pragma once
// One allocator block holding the elements of one or more tensors (a base and its views).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "memlens/allocator/allocator.hpp"
#include "memlens/allocator/device.hpp"

namespace memlens {

class StorageImpl {
 public:
  // Allocates `nbytes` on `device` (already resolved); throws OutOfMemoryError.
  StorageImpl(std::size_t nbytes, const Device& device);
  ~StorageImpl();
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;

  void* data() const { return data_; }
  std::size_t nbytes() const { return nbytes_; }
  const Device& device() const { return device_; }
  std::uint64_t id() const { return id_; }
  // The version counter every view of this storage shares; in-place writes bump it.
  std::uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }
  // Work on stream `s` uses this block: the allocator will not reuse it before that work is done.
  void record_stream(StreamId s);

 private:
  void* data_;
  std::size_t nbytes_;
  Device device_;
  Allocator* allocator_;
  std::uint64_t id_;
  std::atomic<std::uint32_t> version_{0};
};

}  // namespace memlens
