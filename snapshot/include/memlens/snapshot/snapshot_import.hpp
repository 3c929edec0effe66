#pragma once
// A PyTorch memory snapshot (torch.cuda.memory._dump_snapshot, pickle or JSON) converted
// into a memlens trace, so every analysis, check, diff, replay and the viewer read real
// PyTorch runs. The mapping is in docs/pytorch.md.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "memlens/trace/trace_writer.hpp"

namespace memlens::snapshot {

struct ImportOptions {
  // Glob over Python frames ("step", "optimizers.step": function, or file stem and
  // function): a run of allocations under a matching frame ends a step when it ends.
  std::string step_at;
  // Glob over annotation names (record_function ranges, "ProfilerStep*"): each matching
  // range ends a step where it ends.
  std::string step_at_scope;
};

enum class SnapshotEncoding : std::uint8_t { NotSnapshot, Pickle, Json };

struct ImportSummary {
  SnapshotEncoding encoding = SnapshotEncoding::NotSnapshot;  // what the input was
  std::uint64_t entries = 0;                                  // trace entries read, every device
  std::uint64_t events = 0;                                   // events written
  std::uint64_t devices = 0;                                  // cuda devices in the snapshot
  std::uint64_t blocks_at_start = 0;                          // allocations that existed before the first entry
  std::uint64_t segments_at_start = 0;
  std::uint64_t steps = 0;    // Step events written by --step-at / --step-at-scope
  std::uint64_t skipped = 0;  // entries of actions memlens does not map
};

// Recognises a snapshot from its first bytes: pickle protocol 2+ or a JSON document.
SnapshotEncoding sniff_snapshot(std::string_view head);

// Where a converted trace goes: a writer made for the trace's header.
using OpenTraceWriter = std::function<std::unique_ptr<profiler::TraceWriter>(const profiler::TraceHeader&)>;

// Converts the snapshot in `bytes` (named `source` in messages and the trace header) into
// a trace written by the writer `open_writer` makes, which is closed at the end. Throws
// SnapshotError (one line, with the offset or the path in the document) for input that
// is not a snapshot; nothing of the input is executed. `consumed` hears how far reading
// has got (see PyDocument::Progress).
ImportSummary import_snapshot(std::string_view bytes, SnapshotEncoding encoding, const std::string& source,
                              const OpenTraceWriter& open_writer, const ImportOptions& options = {},
                              const std::function<void(std::size_t)>& consumed = {});
// The same into a trace file at `trace_path`.
ImportSummary import_snapshot(std::string_view bytes, SnapshotEncoding encoding, const std::string& source,
                              const std::string& trace_path, const ImportOptions& options = {},
                              const std::function<void(std::size_t)>& consumed = {});

}  // namespace memlens::snapshot
