#pragma once
// A recording of a PyTorch program (memlens' Python recorder: ops, views, copies, roles and
// sites, each storage seen as its own block) merged with its CUDA caching allocator's own
// trace (a snapshot taken as the recording ends, with the history PyTorch keeps when
// torch.cuda.memory._record_memory_history is on). On the devices the allocator's trace
// covers, its segments and blocks replace the recorder's per-storage ones, so reserved
// memory, fragmentation and OOMs are the allocator's; each block the recorder saw as a
// storage keeps that storage's id, role, site and stack, and a block no storage was seen
// on (a library's workspace inside an op) is a temporary of the op running then.
#include <cstdint>
#include <string>
#include <string_view>

#include "memlens/snapshot/snapshot_import.hpp"
#include "memlens/trace/trace_reader.hpp"

namespace memlens::snapshot {

struct AllocatorMergeSummary {
  std::uint64_t storages = 0;       // the recording's storages on the devices the allocator's trace covers
  std::uint64_t matched = 0;        // of those, found as one of the allocator's blocks
  std::uint64_t unseen_blocks = 0;  // the allocator's blocks no storage was seen on
  std::uint64_t segments = 0;       // segment events taken from the allocator's trace
  std::uint64_t ooms = 0;
};

// Writes `recorded` merged with the snapshot in `snapshot` to `out_path`. `trace_minus_unix_ns`
// puts the snapshot's times (unix microseconds) on the recording's clock: the recording's
// clock minus the wall clock, read together. Throws SnapshotError or TraceError (one line).
AllocatorMergeSummary merge_allocator_trace(const profiler::TraceReader& recorded, std::string_view snapshot,
                                            SnapshotEncoding encoding, std::int64_t trace_minus_unix_ns,
                                            const std::string& out_path);

}  // namespace memlens::snapshot
