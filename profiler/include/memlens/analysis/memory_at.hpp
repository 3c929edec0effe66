#pragma once
// The allocator state at one moment of a trace, block by block: what the viewer draws
// under its cursor. Read by replaying the trace up to that moment.
#include <cstdint>
#include <string>
#include <vector>

#include "memlens/analysis/report.hpp"
#include "memlens/common/scalar_type.hpp"
#include "memlens/profiler/trace_reader.hpp"

namespace memlens::analysis {

// A view recorded of a storage: a tensor that shares its memory.
struct TensorView {
  std::uint64_t tensor = 0;
  profiler::ViewKind kind = profiler::ViewKind::View;
  ScalarType dtype = ScalarType::Float32;
  ShapeRecord sizes, strides;
  std::int64_t offset = 0;  // elements
  SiteId site = 0;
};

struct BlockAt {
  std::uint64_t address = 0, size = 0, requested = 0, storage = 0;
  std::int32_t stream = 0;
  Category category = Category::Unknown;
  SiteId site = 0;
  StackId stack = 0;                  // into MemoryAt::stacks (0: none recorded)
  std::uint64_t time_ns = 0;          // allocated at
  std::vector<TensorView> views;      // the last few, newest last
};

struct SegmentAt {
  std::uint64_t address = 0, size = 0;
  std::vector<BlockAt> blocks;  // live blocks inside it, by address
};

struct DeviceAt {
  std::uint8_t index = 0;
  std::string name;
  std::uint64_t allocated = 0, reserved = 0, largest_free_block = 0;
  std::vector<SegmentAt> segments;
  std::vector<BlockAt> loose;  // live blocks outside any recorded segment
};

struct MemoryAt {
  std::uint64_t time_ns = 0;  // since the trace's first event
  std::vector<SiteRef> sites{SiteRef{}};
  std::vector<StackRef> stacks{StackRef{}};
  std::vector<DeviceAt> devices;  // devices with memory then
};

// Everything applied up to and including events at `time_ns` after the first event.
MemoryAt memory_at(const profiler::TraceReader& trace, std::uint64_t time_ns);

}  // namespace memlens::analysis
