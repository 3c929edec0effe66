#pragma once
// The importer's second half: a snapshot run written as trace events.
#include <functional>
#include <vector>

#include "memlens/snapshot/snapshot_import.hpp"
#include "memlens/trace/trace_writer.hpp"
#include "snapshot_run.hpp"

namespace memlens::snapshot {

// Writes `run`'s events and closes `writer` (made with run.header). Its summary counts
// what was written.
ImportSummary write_snapshot_events(const SnapshotRun& run, const ImportOptions& options, profiler::TraceWriter& writer);

// Where a run's events go in a trace of another clock and device list (a recording they
// are merged into): unset, times count from the first entry and devices keep their numbers.
struct EventPlacement {
  std::function<std::uint64_t(std::uint64_t)> unix_us_to_trace_ns;  // an entry's time_us -> the trace's clock
  std::vector<std::uint8_t> devices;                                // the snapshot's device -> the trace's
};
using EventSink = std::function<void(const profiler::Event&)>;

// `run`'s events, in order, handed to `sink` instead of written; their sites, stacks and
// names are interned in `interner` (the writer they will be written with).
ImportSummary snapshot_events(const SnapshotRun& run, const EventPlacement& placement, profiler::TraceWriter& interner,
                              const EventSink& sink);

}  // namespace memlens::snapshot
