#include "trace_input.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "exit_codes.hpp"

namespace memlens::cli {

std::unique_ptr<profiler::TraceReader> open_trace(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UsageError(path + ": is a directory, not a trace");
  try {
    auto r = std::make_unique<profiler::TraceReader>(path);
    if (!r->problem().empty()) std::fprintf(stderr, "memlens: warning: %s\n", r->problem().c_str());
    return r;
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
}

LoadedTrace load_trace(const std::string& path, const analysis::AnalysisOptions& options) {
  LoadedTrace t;
  t.reader = open_trace(path);
  bool tty = isatty(STDERR_FILENO);
  bool shown = false;
  analysis::Progress progress;
  if (tty)
    progress = [&](std::uint64_t done, std::uint64_t total) {
      if (total < (1u << 20)) return;  // quick enough to need no progress
      std::fprintf(stderr, "\rmemlens: reading %s: %3d%%", path.c_str(), static_cast<int>(100 * done / total));
      shown = true;
    };
  try {
    t.report = analysis::analyze(*t.reader, options, progress);
  } catch (const std::exception& e) {
    throw UsageError(path + ": " + e.what());
  }
  if (shown) std::fprintf(stderr, "\r\x1b[K");
  t.report.path = path;
  return t;
}

std::string working_dir() {
  std::error_code ec;
  auto p = std::filesystem::current_path(ec);
  return ec ? "" : p.string();
}

}  // namespace memlens::cli
