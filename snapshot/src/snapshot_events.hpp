#pragma once
// The importer's second half: a snapshot run written as trace events.
#include "memlens/snapshot/snapshot_import.hpp"
#include "memlens/trace/trace_writer.hpp"
#include "snapshot_run.hpp"

namespace memlens::snapshot {

// Writes `run`'s events and closes `writer` (made with run.header). Its summary counts
// what was written.
ImportSummary write_snapshot_events(const SnapshotRun& run, const ImportOptions& options, profiler::TraceWriter& writer);

}  // namespace memlens::snapshot
