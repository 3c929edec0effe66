#pragma once
// The user-facing memory queries, mirroring torch.cuda.memory_*.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "memlens/common/byte_text.hpp"
#include "memlens/allocator/allocator.hpp"
#include "memlens/allocator/device.hpp"

namespace memlens {

std::int64_t memory_allocated(const Device& d = default_device());
std::int64_t memory_reserved(const Device& d = default_device());
std::int64_t max_memory_allocated(const Device& d = default_device());
std::int64_t max_memory_reserved(const Device& d = default_device());
void reset_peak_memory_stats(const Device& d = default_device());
void empty_cache(const Device& d = default_device());
// Pinned host memory (Tensor::pin_memory): its statistics, as memory_stats, and the
// cached blocks returned (torch.cuda.host_memory_stats, torch._C._host_emptyCache).
std::map<std::string, std::int64_t> host_memory_stats();
void host_empty_cache();
// torch.cuda.memory_stats(): "allocated_bytes.all.current" and the rest.
std::map<std::string, std::int64_t> memory_stats(const Device& d = default_device());
// Segments and their blocks, as torch.cuda.memory_snapshot().
std::vector<SegmentSnapshot> memory_snapshot(const Device& d = default_device());

// How badly the reserve is used.
struct Fragmentation {
  double reserved_over_allocated = 0;       // 1.0 is perfect; 0 when nothing is allocated
  double inactive_split_over_reserved = 0;  // share of the reserve in free pieces of split segments
  double free_fragmentation = 0;            // 1 - largest free block / total free
  std::int64_t largest_free_block = 0;
  std::int64_t total_free = 0;  // free bytes inside reserved segments
};
Fragmentation fragmentation(const Allocator& a);
Fragmentation fragmentation(const Device& d = default_device());

// A readable table of the allocator's statistics, like torch.cuda.memory_summary().
std::string memory_summary(const Device& d = default_device());
std::string memory_summary(const Allocator& a);

}  // namespace memlens
