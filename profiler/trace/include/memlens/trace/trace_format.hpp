#pragma once
// The .memtrace file: a versioned header, then append-only chunks, then a footer.
// Layout in docs/trace-format.md.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memlens/common/error.hpp"
#include "memlens/common/event_kinds.hpp"

namespace memlens::profiler {

class TraceError : public Error {
  using Error::Error;
};

// The file ends before its header does: empty, or a trace whose recording has just begun
// (a follower waits for the rest).
class TraceHeaderIncompleteError : public TraceError {
  using TraceError::TraceError;
};

inline constexpr char kTraceMagic[8] = {'M', 'E', 'M', 'T', 'R', 'A', 'C', 'E'};
inline constexpr char kTrailerMagic[8] = {'M', 'E', 'M', 'T', 'E', 'N', 'D', '!'};
inline constexpr std::uint32_t kChunkMagic = 0x4b4e4843;  // "CHNK"
// 4: the typed vocabulary (event.hpp); 5: the footer holds the totals only; 6: an op's
// tensors have strides, dtype and device; 7: and their storage and offset; 8: storage ids
// are deltas.
inline constexpr std::uint32_t kFormatVersion = 8;

enum class ChunkType : std::uint8_t { Events = 1, Strings = 2, Sites = 3, Modules = 4, Stacks = 5, Footer = 15 };
constexpr bool is_chunk_type(std::uint8_t t) { return (t >= 1 && t <= 5) || t == 15; }

// Bounds a reader holds every file to, so memory follows the file's real content.
inline constexpr std::uint32_t kMaxChunkRawBytes = 64u << 20;  // the writer's chunks stay far below
inline constexpr std::uint32_t kMinEventBytes = 4;             // kind, time delta, thread, device
inline constexpr std::uint32_t kMaxChunkEvents = 1u << 16;     // so read_chunk() holds at most ~40 MB of Events
inline constexpr std::size_t kTrailerSize = 16;                // footer offset u64, kTrailerMagic

struct DeviceInfo {
  std::string name;  // "sim:0", "cuda:0", "cpu"
  std::uint64_t capacity = 0;
  bool operator==(const DeviceInfo&) const = default;
};

struct TraceHeader {
  std::string program;
  std::int64_t pid = 0;
  std::string clock = "steady_clock_ns";
  std::int64_t start_unix_ns = 0;  // wall clock when recording began
  std::vector<DeviceInfo> devices;
  std::string allocator_config;
  std::string notes;  // e.g. "cuda served by sim: no CUDA device: ..."
  // The trace stops where a snapshot was taken, mid-run (PyTorch's): what is alive at
  // its end is not a leak by itself.
  bool ends_mid_run = false;
  bool operator==(const TraceHeader&) const = default;
};

// What a frame was written in: stacks imported from PyTorch mix Python and C++ frames.
enum class Language : std::uint8_t { Unknown = 0, Native = 1, Python = 2 };
inline constexpr std::uint8_t kLanguageCount = 3;
std::string_view language_name(Language l);  // "unknown", "native", "python"

// A call site or stack frame: file, line, function as written (interned strings), or a
// code address that the reader symbolises with the module table (file = 0 then).
struct Site {
  std::uint32_t file = 0;  // interned string
  std::uint32_t line = 0;
  std::uint32_t function = 0;  // interned string
  std::uint64_t address = 0;   // return address into the caller's code
  Language language = Language::Unknown;
  bool operator==(const Site&) const = default;
};

// A loaded executable or library, so addresses can be symbolised after the process is gone.
struct ModuleInfo {
  std::string path;
  std::uint64_t start = 0, end = 0;  // its mapped address range
  std::uint64_t bias = 0;            // load address minus link address
  std::string build_id;              // hex; empty when the file has none
  bool operator==(const ModuleInfo&) const = default;
};

// A site as the reader resolves it.
struct SiteInfo {
  std::string file;  // "" when unknown
  std::uint32_t line = 0;
  std::string function;  // demangled when symbolised
  std::uint64_t address = 0;
  Language language = Language::Unknown;
};

struct ChunkInfo {
  std::uint64_t offset;  // of the chunk's magic in the file
  ChunkType type;
  std::uint32_t count;  // events or table entries
  std::uint64_t first_time_ns;
};

// Totals written in the footer and recomputed by the reader.
struct TraceTotals {
  std::uint64_t events = 0;
  std::vector<std::uint64_t> by_kind = std::vector<std::uint64_t>(kEventKindCount + 1, 0);  // by EventKind value
  bool operator==(const TraceTotals&) const = default;
};

}  // namespace memlens::profiler
