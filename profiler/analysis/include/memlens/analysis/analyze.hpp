#pragma once
// One streaming pass over a trace that builds every section of a Report. Memory grows
// with live blocks and sites, not with events.
#include <cstdint>
#include <functional>

#include "memlens/analysis/report.hpp"
#include "memlens/trace/trace_reader.hpp"

namespace memlens::analysis {

struct AnalysisOptions {
  double broadcast_factor = 4;           // flag ops whose output is this many times their largest input
  std::uint64_t broadcast_floor = 4096;  // ... and at least this many bytes
  std::uint64_t temporary_window = 16;   // an allocation freed within this many events is temporary
  std::uint64_t constant_floor = 4096;   // a constant made every step is flagged from this many bytes
  std::size_t timeline_buckets = 512;    // per device
  std::size_t top_sites = 10;            // sites kept per table at a peak
};

// Called now and then with events read so far and the total expected.
using Progress = std::function<void(std::uint64_t done, std::uint64_t total)>;

Report analyze(const profiler::TraceReader& trace, const AnalysisOptions& options = {}, const Progress& progress = {});

}  // namespace memlens::analysis
