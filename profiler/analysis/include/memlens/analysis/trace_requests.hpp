#pragma once
// A trace's allocation requests on one device, as input for the allocator what-if
// (memlens/allocator/request_replay.hpp): "would expandable_segments have avoided this OOM?"
#include <string>
#include <vector>

#include "memlens/allocator/request_replay.hpp"
#include "memlens/trace/trace_reader.hpp"

namespace memlens::analysis {

// The requested sizes of every Alloc and the matching frees on `device` ("sim:0"; "" =
// the first device with allocations other than cpu). A request that ran out of memory is
// tried at its moment and freed at once: would it have fitted? Throws ReplayError when
// the trace has no such device.
std::vector<ReplayRequest> replay_requests(const profiler::TraceReader& trace, const std::string& device,
                                           std::string* chosen = nullptr);

}  // namespace memlens::analysis
