#pragma once
// Allocator what-ifs: run a recorded sequence of alloc/free requests through any
// allocator configuration on a private sim device and see its peak reserve,
// fragmentation and OOMs. "Would expandable_segments have avoided this OOM?"
#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "memlens/allocator/allocator_config.hpp"
#include "memlens/allocator/errors.hpp"
#include "memlens/allocator/stream.hpp"

namespace memlens {

class ReplayError : public Error {
  using Error::Error;
};

struct ReplayRequest {
  enum class Op : std::uint8_t { Alloc, Free };
  Op op;
  std::uint64_t id;       // names the block between its alloc and its free
  std::size_t bytes = 0;  // Alloc only
  StreamId stream = kDefaultStream;
  std::size_t line = 0;  // where it came from, for messages
};

// Reads "alloc ID BYTES [STREAM]" / "free ID" lines, or the same as CSV
// ("alloc,ID,BYTES,STREAM"; a header line "op,..." is skipped). BYTES takes units
// (16MiB). '#' starts a comment. Throws ReplayError "NAME:LINE: ..." on bad input.
std::vector<ReplayRequest> parse_replay(std::istream& in, const std::string& name);

struct ReplayOptions {
  AllocatorConfig config;
  std::size_t capacity = std::size_t{16} << 30;  // of the simulated device
};

struct ReplayOom {
  std::size_t line;
  std::size_t bytes;
  std::int64_t reserved, allocated, largest_free_block;
};

struct ReplayResult {
  std::size_t allocs = 0, frees = 0;
  std::int64_t peak_allocated = 0, peak_reserved = 0, final_reserved = 0;
  // reserved / allocated when the reserve peaked (1.0 is no waste).
  double reserved_over_allocated_at_peak = 0;
  std::int64_t num_alloc_retries = 0, num_device_alloc = 0;
  std::vector<ReplayOom> ooms;  // the requests that failed; replay goes on without them
};

ReplayResult replay(const std::vector<ReplayRequest>& requests, const ReplayOptions& options);
// A few readable lines: configuration, peaks, ratio, OOMs.
std::string format_replay(const ReplayResult& r, const ReplayOptions& options);

}  // namespace memlens
