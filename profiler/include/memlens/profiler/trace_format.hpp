#pragma once
// The .memtrace file: a versioned header, then append-only chunks, then a footer.
// Layout in docs/trace-format.md.
#include <cstdint>
#include <string>
#include <vector>

#include "memlens/runtime/errors.hpp"

namespace memlens::profiler {

class TraceError : public Error { using Error::Error; };

inline constexpr char kTraceMagic[8] = {'M', 'E', 'M', 'T', 'R', 'A', 'C', 'E'};
inline constexpr char kTrailerMagic[8] = {'M', 'E', 'M', 'T', 'E', 'N', 'D', '!'};
inline constexpr std::uint32_t kChunkMagic = 0x4b4e4843;  // "CHNK"
inline constexpr std::uint32_t kFormatVersion = 1;

enum class ChunkType : std::uint8_t { Events = 1, Strings = 2, Sites = 3, Footer = 15 };

struct DeviceInfo {
  std::string name;  // "sim:0", "cuda:0", "cpu"
  std::uint64_t capacity = 0;
  bool operator==(const DeviceInfo&) const = default;
};

struct TraceHeader {
  std::string program;
  std::int64_t pid = 0;
  std::string clock = "steady_clock_ns";
  std::int64_t start_unix_ns = 0;      // wall clock when recording began
  std::vector<DeviceInfo> devices;
  std::string allocator_config;
  std::string notes;                   // e.g. "cuda served by sim: no CUDA device: ..."
  bool operator==(const TraceHeader&) const = default;
};

// A user call site: file, line, function.
struct Site {
  std::uint32_t file = 0;      // interned string
  std::uint32_t line = 0;
  std::uint32_t function = 0;  // interned string
  bool operator==(const Site&) const = default;
};

struct ChunkInfo {
  std::uint64_t offset;  // of the chunk's magic in the file
  ChunkType type;
  std::uint32_t count;   // events or table entries
  std::uint64_t first_time_ns;
};

// Totals written in the footer and recomputed by the reader.
struct TraceTotals {
  std::uint64_t events = 0;
  std::vector<std::uint64_t> by_kind = std::vector<std::uint64_t>(16, 0);
  bool operator==(const TraceTotals&) const = default;
};

}  // namespace memlens::profiler
