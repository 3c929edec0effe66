#pragma once
// One streaming pass over a trace that builds every section of a Report. Memory grows
// with live blocks and sites, not with events. The pass can be resumed: a trace still
// being recorded is read as its chunks arrive, with a report of what has arrived at any
// time (memlens report --follow, the viewer's --follow).
#include <cstdint>
#include <functional>
#include <memory>

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

// The pass over one trace, fed the chunks that have arrived since the last feed.
class AnalysisPass {
 public:
  AnalysisPass(const profiler::TraceReader& trace, const AnalysisOptions& options = {});
  ~AnalysisPass();
  AnalysisPass(const AnalysisPass&) = delete;
  AnalysisPass& operator=(const AnalysisPass&) = delete;

  // Reads the trace's readable chunks not read yet (after the reader's refresh(), those
  // it appended); returns the events read.
  std::uint64_t read_new_chunks(const Progress& progress = {});
  // The report of every event read so far. `in_progress`: the recording goes on, so what
  // is alive now is not a leak, and OOMs are not replayed (a replay reads the whole trace).
  Report report(bool in_progress = false);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

Report analyze(const profiler::TraceReader& trace, const AnalysisOptions& options = {}, const Progress& progress = {});

}  // namespace memlens::analysis
