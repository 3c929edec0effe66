#pragma once
// Pinned host memory (Tensor::pin_memory), with PyTorch's CachingHostAllocator policy:
// each request is rounded up to a power of two and gets a block of its own; a freed
// block is kept for the next request of that size and goes back to the source only on
// empty_cache. The source says what the memory is: page-locked with the CUDA backend,
// plain host memory named cuda_host without it.
#include <map>
#include <memory>
#include <vector>

#include "memlens/allocator/allocator.hpp"
#include "memlens/allocator/memory_source.hpp"

namespace memlens {

class CachingHostAllocator final : public Allocator {
 public:
  static constexpr std::size_t kMinBlockSize = 512;

  // `events` says when GPU work that read or wrote a block is done (none: host copies
  // are done when they return, and a freed block is reusable at once).
  explicit CachingHostAllocator(std::unique_ptr<MemorySource> source, StreamEvents* events = nullptr);
  ~CachingHostAllocator() override;
  CachingHostAllocator(const CachingHostAllocator&) = delete;
  CachingHostAllocator& operator=(const CachingHostAllocator&) = delete;

  void* allocate(std::size_t bytes, StreamId stream = kDefaultStream, std::uint64_t owner = 0) override;
  void deallocate(void* ptr) override;
  // An asynchronous copy on `stream` uses the block: once freed, it is reused only after
  // that copy is done (PyTorch's CachingHostAllocator records an event the same way).
  void record_stream(void* ptr, StreamId stream) override;
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
    std::vector<StreamId> used_by;  // streams of asynchronous copies (record_stream)
  };
  struct PendingFree {
    void* ptr;
    Block block;
    std::vector<std::pair<StreamId, std::uint64_t>> markers;
  };
  // Frees whose copies have finished: FreeCompleted, back in the cache. Called with mu_ held.
  void complete_finished_frees();
  void cache_freed(void* ptr, const Block& b);
  std::unique_ptr<MemorySource> source_;
  StreamEvents* events_;
  std::vector<PendingFree> pending_;
  std::map<void*, Block> live_;
  std::multimap<std::size_t, void*> cached_;  // free blocks by size
};

}  // namespace memlens
