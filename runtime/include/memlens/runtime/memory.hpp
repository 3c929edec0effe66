#pragma once
// The user-facing memory queries, mirroring torch.cuda.memory_*.
#include <cstdint>
#include <string>

#include "memlens/runtime/device.hpp"

namespace memlens {

std::int64_t memory_allocated(const Device& d = default_device());
std::int64_t memory_reserved(const Device& d = default_device());
std::int64_t max_memory_allocated(const Device& d = default_device());
std::int64_t max_memory_reserved(const Device& d = default_device());
void reset_peak_memory_stats(const Device& d = default_device());
void empty_cache(const Device& d = default_device());
// A readable table of the allocator's statistics, like torch.cuda.memory_summary().
std::string memory_summary(const Device& d = default_device());
// "4.00 MiB" style.
std::string format_bytes(std::int64_t bytes);

}  // namespace memlens
