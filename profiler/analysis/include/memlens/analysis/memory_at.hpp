#pragma once
// The allocator state at one moment of a trace, block by block: what the viewer draws
// under its cursor. Read by replaying the trace up to that moment, from a checkpoint when
// one is kept.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "memlens/analysis/report.hpp"
#include "memlens/common/scalar_type.hpp"
#include "memlens/trace/trace_reader.hpp"

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
  StackId stack = 0;              // into MemoryAt::stacks (0: none recorded)
  std::uint64_t time_ns = 0;      // allocated at
  std::vector<TensorView> views;  // the last few, newest last
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

class SiteTable;

// memory_at for a cursor that moves (the viewer's): each visit replays from the nearest
// checkpoint it holds, the state at a chunk boundary, which replays leave behind every
// `spacing` events as they pass. After one visit to the end, any moment costs at most
// about a spacing's worth of events. Checkpoints are bounded (at most 64: past that,
// every other one goes and the spacing doubles). A trace that grows (TraceReader::refresh)
// keeps its checkpoints: a visit to the newest moment replays only what came since.
class MemoryAtIndex {
 public:
  explicit MemoryAtIndex(const profiler::TraceReader& trace, std::uint64_t spacing = 1 << 18);
  ~MemoryAtIndex();
  MemoryAtIndex(const MemoryAtIndex&) = delete;
  MemoryAtIndex& operator=(const MemoryAtIndex&) = delete;

  // Everything applied up to and including events at `time_ns` after the first event.
  MemoryAt at(std::uint64_t time_ns);
  std::size_t checkpoints() const { return checkpoints_.size(); }

 private:
  struct State;
  void thin();
  MemoryAt describe(const State& state, std::uint64_t time_ns, std::uint64_t first);

  const profiler::TraceReader& trace_;
  std::vector<profiler::ChunkInfo> chunks_;
  std::vector<SiteRef> sites_{SiteRef{}};  // shared by every visit, so site ids are stable
  std::unique_ptr<SiteTable> site_table_;
  std::map<std::size_t, std::unique_ptr<State>> checkpoints_;  // the state before chunk i
  struct Tail;
  std::unique_ptr<Tail> tail_;  // where the last visit that reached the trace's end left off
  std::uint64_t spacing_;
};

// One visit: everything applied up to and including events at `time_ns` after the first
// event.
MemoryAt memory_at(const profiler::TraceReader& trace, std::uint64_t time_ns);

}  // namespace memlens::analysis
