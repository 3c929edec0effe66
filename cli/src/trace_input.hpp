#pragma once
// Opening traces for the commands: progress on stderr while reading (TTY only), a
// warning for an incomplete trace, a UsageError for one that cannot be read at all.
#include <memory>
#include <string>
#include <vector>

#include "memlens/analysis/analyze.hpp"

namespace memlens::cli {

struct LoadedTrace {
  std::unique_ptr<profiler::TraceReader> reader;
  analysis::Report report;
};

std::unique_ptr<profiler::TraceReader> open_trace(const std::string& path);
LoadedTrace load_trace(const std::string& path, const analysis::AnalysisOptions& options = {});
// The working directory: sites under it are shown relative to it.
std::string working_dir();

}  // namespace memlens::cli
