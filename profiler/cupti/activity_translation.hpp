#pragma once
// CUPTI activity records as memlens trace events, with no CUDA call of its own, so it
// is tested on synthetic records where there is no GPU. A framework's caching allocator
// hides its blocks from CUPTI, so what arrives is segment-level: cudaMalloc and
// cudaFree become segment events, stream-ordered pool allocations become blocks of
// their pool, copies become copy events and memsets become "memset" ops.
#include <cupti_activity.h>

#include <cstdint>
#include <string>
#include <vector>

#include "memlens/trace/event.hpp"
#include "memlens/trace/trace_format.hpp"

namespace memlens::cupti {

// The trace's device list: cpu, sim:0 (unused), then cuda:0 ... cuda:15, so CUDA device
// N is index 2 + N as in the runtime's own traces.
std::vector<profiler::DeviceInfo> trace_devices();
std::uint8_t device_index(std::uint32_t cuda_device);

struct TranslatedNames {
  std::uint32_t memset = 0;  // interned "memset"
};

// Appends the events of one record (none for kinds memlens does not keep).
void translate(const CUpti_Activity* record, const TranslatedNames& names, std::vector<profiler::Event>& out);

}  // namespace memlens::cupti
