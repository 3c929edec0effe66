#include "memlens/analysis/memory_at.hpp"

#include <absl/container/flat_hash_map.h>

#include <algorithm>

#include "live_memory.hpp"
#include "site_table.hpp"

namespace memlens::analysis {

using profiler::Event;
using profiler::EventKind;

namespace {
constexpr std::size_t kViewsKept = 8;
constexpr std::size_t kMaxCheckpoints = 64;
}  // namespace

// The replayed state at a chunk boundary: live memory and the last views of each storage.
struct MemoryAtIndex::State {
  explicit State(std::size_t devices) : live(devices) {}
  LiveMemory live;
  absl::flat_hash_map<std::uint64_t, std::vector<TensorView>> views;  // by live storage
  std::uint64_t index = 0;                                            // events applied
};

MemoryAtIndex::MemoryAtIndex(const profiler::TraceReader& trace, std::uint64_t spacing)
    : trace_(trace),
      chunks_(trace.chunks()),
      site_table_(std::make_unique<SiteTable>(trace, sites_)),
      spacing_(std::max<std::uint64_t>(spacing, 1)) {}

// The state after every chunk read so far, and when its last event happened.
struct MemoryAtIndex::Tail {
  State state;
  std::size_t chunk = 0;  // the chunks before this one are applied
  std::uint64_t last_time_ns = 0;
};

MemoryAtIndex::~MemoryAtIndex() = default;

MemoryAt MemoryAtIndex::at(std::uint64_t time_ns) {
  // A trace followed while recorded has grown since: the checkpoints before stay true.
  if (chunks_.size() != trace_.chunk_count()) chunks_ = trace_.chunks();
  const std::uint64_t first = chunks_.empty() ? 0 : chunks_.front().first_time_ns;
  const std::uint64_t until = time_ns > UINT64_MAX - first ? UINT64_MAX : first + time_ns;
  // Resume from the last checkpoint at or before the moment (or from the start), or from
  // the end of the last visit that applied every event up to then.
  std::size_t from = 0;
  State state(trace_.header().devices.size());
  for (auto it = checkpoints_.rbegin(); it != checkpoints_.rend(); ++it)
    if (chunks_[it->first].first_time_ns <= until) {
      from = it->first;
      state = *it->second;
      break;
    }
  if (tail_ && tail_->chunk >= from && tail_->last_time_ns <= until) {
    from = tail_->chunk;
    state = tail_->state;
  }
  bool skipped = false;        // an event after the moment was left out: the state is not the end's
  std::uint64_t last = 0;      // the time of the last event applied
  std::uint64_t since = 0;     // events since the last checkpoint passed
  std::size_t read_to = from;  // the chunks before it were read
  trace_.for_each_from(
      from,
      [&](std::size_t chunk) {
        read_to = chunk + 1;
        if (chunk == from || since < spacing_ || checkpoints_.count(chunk)) return;
        checkpoints_.emplace(chunk, std::make_unique<State>(state));
        since = 0;
        if (checkpoints_.size() > kMaxCheckpoints) thin();
      },
      [&](const Event& e) {
        ++since;
        if (e.time_ns > until) {
          skipped = true;
          return;
        }
        last = std::max(last, e.time_ns);
        SiteId site = site_table_->map(e.site());
        const LiveBlock* b = state.live.apply(e, site, state.index++, 0);
        if (e.kind == EventKind::View && e.view.storage) {
          const profiler::ViewEvent& w = e.view;
          auto& v = state.views[w.storage];
          if (v.size() == kViewsKept) v.erase(v.begin());
          v.push_back({w.tensor, w.view, w.dtype, w.sizes, w.strides, w.offset, site});
        } else if (e.kind == EventKind::FreeRequested && b && b->storage) {
          state.views.erase(b->storage);
        }
      },
      until);
  // Everything read was applied: the next visit at or after the newest event (a cursor
  // that follows a recording) starts here and replays only what has arrived since.
  if (!skipped && read_to > from && (!tail_ || read_to > tail_->chunk))
    tail_ = std::make_unique<Tail>(Tail{state, read_to, last});
  return describe(state, time_ns, first);
}

void MemoryAtIndex::thin() {
  // Every other checkpoint goes, and the spacing doubles: memory stays bounded, and a
  // cursor still replays at most twice the old spacing.
  bool drop = false;
  for (auto it = checkpoints_.begin(); it != checkpoints_.end();) {
    if (drop) it = checkpoints_.erase(it);
    else ++it;
    drop = !drop;
  }
  spacing_ *= 2;
}

MemoryAt MemoryAtIndex::describe(const State& state, std::uint64_t time_ns, std::uint64_t first) {
  MemoryAt out;
  out.time_ns = time_ns;
  out.sites = sites_;
  StackTable stacks(trace_, out.stacks);
  const LiveMemory& live = state.live;
  const auto& names = trace_.header().devices;
  for (std::size_t i = 0; i < live.device_count(); ++i) {
    auto d = static_cast<std::uint8_t>(i);
    const DeviceState& s = live.device(d);
    if (s.blocks.empty() && s.segments.empty()) continue;
    DeviceAt dev;
    dev.index = d;
    dev.name = i < names.size() ? names[i].name : "device " + std::to_string(i);
    dev.allocated = s.allocated, dev.reserved = s.reserved, dev.largest_free_block = live.largest_free_block(d);
    auto describe_block = [&](const LiveBlock& b) {
      BlockAt a{b.address,  b.size, b.requested,         b.storage,         b.stream,
                b.category, b.site, stacks.map(b.stack), b.time_ns - first, {}};
      if (auto it = state.views.find(b.storage); b.storage && it != state.views.end()) a.views = it->second;
      return a;
    };
    auto block = s.blocks.begin();
    for (auto [addr, size] : s.segments) {
      for (; block != s.blocks.end() && block->first < addr; ++block) dev.loose.push_back(describe_block(block->second));
      SegmentAt seg{addr, size, {}};
      for (; block != s.blocks.end() && block->first < addr + size; ++block) seg.blocks.push_back(describe_block(block->second));
      dev.segments.push_back(std::move(seg));
    }
    for (; block != s.blocks.end(); ++block) dev.loose.push_back(describe_block(block->second));
    out.devices.push_back(std::move(dev));
  }
  return out;
}

MemoryAt memory_at(const profiler::TraceReader& trace, std::uint64_t time_ns) { return MemoryAtIndex(trace).at(time_ns); }

}  // namespace memlens::analysis
