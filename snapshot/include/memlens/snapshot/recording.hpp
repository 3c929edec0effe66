#pragma once
// What a command is given to read: a memlens trace, or a PyTorch memory snapshot,
// recognised by its content and converted into a temporary trace that is gone once open.
#include <memory>
#include <string>

#include "memlens/profiler/trace_reader.hpp"
#include "memlens/snapshot/snapshot_import.hpp"

namespace memlens::snapshot {

// Throws SnapshotError ("run.pickle: pickle offset 12: ...") or TraceError, one line each.
std::unique_ptr<profiler::TraceReader> open_recording(const std::string& path, const ImportOptions& options = {});

// What the file at `path` is, from its first bytes; SnapshotError when it cannot be read.
SnapshotEncoding sniff_snapshot_file(const std::string& path);
// Converts the snapshot at `path` into a trace at `trace_path`. The file is mapped and
// read once, front to back, its pages let go behind the reader, so memory follows what
// is built from it rather than its size. Throws SnapshotError naming `path`.
ImportSummary import_snapshot_file(const std::string& path, const std::string& trace_path, const ImportOptions& options = {});

}  // namespace memlens::snapshot
