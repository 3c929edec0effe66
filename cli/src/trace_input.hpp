#pragma once
// Opening traces for the commands: progress on stderr while reading (TTY only), a
// warning for an incomplete trace, a UsageError for one that cannot be read at all.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "memlens/analysis/analyze.hpp"
#include "memlens/input/input_file.hpp"

namespace memlens::cli {

struct LoadedTrace {
  std::unique_ptr<profiler::TraceReader> reader;
  analysis::Report report;
};

// An input opened through the one door (memlens/input); UsageError when it cannot be.
input::InputFile open_file(const std::string& path);
// A trace, or a PyTorch snapshot converted on the way in (`options` say how).
std::unique_ptr<profiler::TraceReader> open_trace(input::InputFile file, const snapshot::ImportOptions& options = {});
std::unique_ptr<profiler::TraceReader> open_trace(const std::string& path, const snapshot::ImportOptions& options = {});
// "memlens: warning: PATH: ..." on stderr when the trace could be read only in part. Call
// after the passes: a pass can find a chunk that does not decode.
void warn_if_incomplete(const profiler::TraceReader& trace);
LoadedTrace load_trace(const std::string& path, const analysis::AnalysisOptions& options = {},
                       const snapshot::ImportOptions& import = {});
// Reads a small input (a baseline). Only a regular file is opened, without blocking, and
// one larger than `max_bytes` is a UsageError.
std::string read_input_file(const std::string& path, std::size_t max_bytes);
inline constexpr std::size_t kMaxBaselineFileBytes = 1 << 20;
inline constexpr std::uint64_t kMinReplayCapacity = 1;
inline constexpr std::uint64_t kUnknownCapacity = std::uint64_t{1} << 40;  // a device's size the trace does not give

// The working directory: sites under it are shown relative to it.
std::string working_dir();

}  // namespace memlens::cli
