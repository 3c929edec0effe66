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

// The whole of a regular file, read without blocking; SnapshotError naming it otherwise.
std::string read_whole_file(const std::string& path);

}  // namespace memlens::snapshot
