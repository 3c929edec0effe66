#pragma once
// The caching allocator, with PyTorch's CUDA caching allocator's policy
// (c10/cuda/CUDACachingAllocator.cpp): 512 B rounding, a small pool of 2 MiB segments
// for requests up to 1 MiB, a large pool (20 MiB segments under 10 MiB, 2 MiB-rounded
// above), best fit by (stream, size, address), splitting, coalescing, max_split_size,
// per-stream blocks with record_stream, staged OOM handling, and expandable segments.
#include <deque>
#include <map>
#include <memory>
#include <absl/container/flat_hash_map.h>
#include <set>

#include "memlens/allocator/allocator.hpp"
#include "memlens/allocator/allocator_config.hpp"
#include "memlens/allocator/memory_source.hpp"

namespace memlens {

class CachingAllocator final : public Allocator {
 public:
  static constexpr std::size_t kMinBlockSize = 512;
  static constexpr std::size_t kSmallSize = 1 << 20;     // largest small-pool request
  static constexpr std::size_t kSmallBuffer = 2 << 20;   // small-pool segment
  static constexpr std::size_t kLargeBuffer = 20 << 20;  // large-pool segment for < kMinLargeAlloc
  static constexpr std::size_t kMinLargeAlloc = 10 << 20;
  static constexpr std::size_t kRoundLarge = 2 << 20;
  static constexpr std::size_t kPageSize = 2 << 20;  // expandable segments grow by pages

  // `events` says when recorded stream work completes (SimStreams when null).
  CachingAllocator(std::unique_ptr<MemorySource> source, AllocatorConfig config = {}, StreamEvents* events = nullptr);
  ~CachingAllocator() override;
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  void* allocate(std::size_t bytes, StreamId stream = kDefaultStream, std::uint64_t owner = 0) override;
  void deallocate(void* ptr) override;
  void record_stream(void* ptr, StreamId stream) override;
  void empty_cache() override;
  std::vector<SegmentSnapshot> snapshot() const override;
  std::uint64_t capacity() const override { return source_->capacity(); }
  Device device() const override { return source_->device(); }
  std::string config_string() const override { return config_.to_string(); }
  const AllocatorConfig& config() const { return config_; }

  // The size a request is rounded to, and the segment size a miss allocates.
  std::size_t round_size(std::size_t bytes) const;
  static std::size_t allocation_size(std::size_t rounded);

 private:
  struct Block;
  struct BlockPool;
  struct Expandable;
  struct Request {
    std::size_t size;       // rounded
    std::size_t requested;  // as asked
    StreamId stream;
    BlockPool* pool;
  };

  Block* get_free_block(const Request& r);
  bool alloc_segment(const Request& r);
  bool grow_expandable(const Request& r);
  bool release_available_cached_blocks(const Request& r);
  void release_cached_blocks();
  void release_segment(Block* b);
  bool should_split(const Block* b, std::size_t size) const;
  void free_block(Block* b);
  std::size_t try_merge(Block* dst, Block* src);
  void process_events();
  void shrink_expandable();
  [[noreturn]] void throw_oom(const Request& r);
  std::size_t largest_free_block() const;
  std::size_t cached_free_bytes() const;

  Block* new_block(std::size_t size, StreamId stream, char* ptr, BlockPool* pool, Expandable* e = nullptr);
  void delete_block(Block* b);
  void pool_insert(BlockPool* pool, Block* b);
  template <class Key>
  void pool_erase(BlockPool* pool, Key key);

  // Best fit: by stream, then size, then address (PyTorch's BlockComparatorSize).
  struct BySize {
    bool operator()(const Block* a, const Block* b) const;
  };
  using BlockSet = std::set<Block*, BySize>;

  std::unique_ptr<MemorySource> source_;
  AllocatorConfig config_;
  StreamEvents* events_;
  std::unique_ptr<BlockPool> small_, large_;
  // Allocated (and pending-free) blocks by address; absl's flat map allocates no nodes.
  absl::flat_hash_map<void*, Block*> active_;
  // Recycled Block objects and one recycled pool-set node: a hot alloc/free pair, which
  // splits a block and merges it back, calls no malloc.
  std::vector<Block*> spare_blocks_;
  BlockSet::node_type spare_node_;
  std::map<std::uintptr_t, Block*> segments_;                                  // segment heads by address
  std::deque<std::pair<Block*, std::pair<StreamId, std::uint64_t>>> pending_;  // frees waiting on streams
  std::vector<std::unique_ptr<Expandable>> expandables_;
};

}  // namespace memlens
