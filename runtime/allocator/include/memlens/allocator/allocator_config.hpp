#pragma once
// The caching allocator's knobs, in PyTorch's PYTORCH_CUDA_ALLOC_CONF syntax:
// "max_split_size_mb:128,roundup_power2_divisions:4,expandable_segments:True".
#include <cstddef>
#include <limits>
#include <string>

namespace memlens {

struct AllocatorConfig {
  // Blocks at least this large are never split (and not used for smaller requests).
  std::size_t max_split_size = std::numeric_limits<std::size_t>::max();
  // 0: round to 512 B. N (a power of two): round up to N divisions per power-of-two interval.
  std::size_t roundup_power2_divisions = 0;
  // One growing segment per stream and pool instead of fixed segments (sim only).
  bool expandable_segments = false;

  // Throws Error naming the bad part ("MEMLENS_ALLOC_CONF: unknown option 'x'").
  static AllocatorConfig parse(const std::string& text);
  // MEMLENS_ALLOC_CONF, or the defaults.
  static AllocatorConfig from_env();
  std::string to_string() const;  // parseable, as it goes into trace headers
};

}  // namespace memlens
