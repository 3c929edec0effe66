#pragma once
// Pinned host memory (Tensor::pin_memory), with PyTorch's CachingHostAllocator policy:
// each request is rounded up to a power of two and gets a block of its own; a freed
// block is kept for the next request of that size and goes back to the source only on
// empty_cache. The source says what the memory is: page-locked with the CUDA backend,
// plain host memory named cuda_host without it.
#include <map>
#include <memory>
#include <vector>

#include "memlens/runtime/allocator.hpp"
#include "memlens/runtime/memory_source.hpp"

namespace memlens {

class CachingHostAllocator final : public Allocator {
 public:
  static constexpr std::size_t kMinBlockSize = 512;

  explicit CachingHostAllocator(std::unique_ptr<MemorySource> source);
  ~CachingHostAllocator() override;
  CachingHostAllocator(const CachingHostAllocator&) = delete;
  CachingHostAllocator& operator=(const CachingHostAllocator&) = delete;

  void* allocate(std::size_t bytes, StreamId stream = kDefaultStream, std::uint64_t owner = 0) override;
  void deallocate(void* ptr) override;
  // Host copies on sim are done when they return, so a freed block is reusable at once;
  // the CUDA backend's copies will record events here.
  void record_stream(void*, StreamId) override {}
  void empty_cache() override;
  std::vector<SegmentSnapshot> snapshot() const override;
  std::uint64_t capacity() const override { return source_->capacity(); }
  Device device() const override { return source_->device(); }
  std::string config_string() const override { return ""; }

  // The block size a request gets: the next power of two, at least kMinBlockSize.
  static std::size_t round_size(std::size_t bytes);

 private:
  struct Block {
    std::size_t size;
    std::size_t requested;
    std::uint64_t owner;
    StreamId stream;
  };
  std::unique_ptr<MemorySource> source_;
  std::map<void*, Block> live_;
  std::multimap<std::size_t, void*> cached_;  // free blocks by size
};

}  // namespace memlens
