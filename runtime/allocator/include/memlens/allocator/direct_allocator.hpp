#pragma once
// One segment per block, nothing cached: the host allocator (PyTorch's CPU allocator
// does not cache either).
#include <map>
#include <memory>

#include "memlens/allocator/allocator.hpp"
#include "memlens/allocator/memory_source.hpp"

namespace memlens {

class DirectAllocator final : public Allocator {
 public:
  explicit DirectAllocator(std::unique_ptr<MemorySource> source);
  ~DirectAllocator() override;
  void* allocate(std::size_t bytes, StreamId stream = kDefaultStream, std::uint64_t owner = 0) override;
  void deallocate(void* ptr) override;
  void record_stream(void*, StreamId) override {}
  void empty_cache() override {}
  std::vector<SegmentSnapshot> snapshot() const override;
  std::uint64_t capacity() const override { return source_->capacity(); }
  Device device() const override { return source_->device(); }
  std::string config_string() const override { return ""; }

  static constexpr std::size_t kRound = 512;

 private:
  struct Block {
    std::size_t size;
    std::size_t requested;
    std::uint64_t owner;
    StreamId stream;
  };
  std::unique_ptr<MemorySource> source_;
  std::map<void*, Block> live_;
};

}  // namespace memlens
