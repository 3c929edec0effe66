#include "memlens/analysis/memory_at.hpp"

#include <absl/container/flat_hash_map.h>

#include "live_memory.hpp"
#include "site_table.hpp"

namespace memlens::analysis {

using profiler::Event;
using profiler::EventKind;

MemoryAt memory_at(const profiler::TraceReader& trace, std::uint64_t time_ns) {
  MemoryAt out;
  out.time_ns = time_ns;
  LiveMemory live(trace.header().devices.size());
  SiteTable sites(trace, out.sites);
  StackTable stacks(trace, out.stacks);
  absl::flat_hash_map<std::uint64_t, std::vector<TensorView>> views;  // by live storage
  constexpr std::size_t kViewsKept = 8;
  std::uint64_t index = 0;
  // Only the chunks up to the moment are read; events past it in the last one are skipped.
  const auto chunks = trace.chunks();
  const std::uint64_t first = chunks.empty() ? 0 : chunks.front().first_time_ns;
  const std::uint64_t until = time_ns > UINT64_MAX - first ? UINT64_MAX : first + time_ns;
  trace.for_each([&](const Event& e) {
    if (e.time_ns > until) return;
    SiteId site = sites.map(e.site());
    const LiveBlock* b = live.apply(e, site, index++, 0);
    if (e.kind == EventKind::View && e.view.storage) {
      const profiler::ViewEvent& w = e.view;
      auto& v = views[w.storage];
      if (v.size() == kViewsKept) v.erase(v.begin());
      v.push_back({w.tensor, w.view, w.dtype, w.sizes, w.strides, w.offset, site});
    } else if (e.kind == EventKind::FreeRequested && b && b->storage) {
      views.erase(b->storage);
    }
  }, until);
  const auto& names = trace.header().devices;
  for (std::size_t i = 0; i < live.device_count(); ++i) {
    auto d = static_cast<std::uint8_t>(i);
    const DeviceState& s = live.device(d);
    if (s.blocks.empty() && s.segments.empty()) continue;
    DeviceAt dev;
    dev.index = d;
    dev.name = i < names.size() ? names[i].name : "device " + std::to_string(i);
    dev.allocated = s.allocated, dev.reserved = s.reserved, dev.largest_free_block = live.largest_free_block(d);
    auto describe = [&](const LiveBlock& b) {
      BlockAt a{b.address, b.size, b.requested, b.storage, b.stream, b.category, b.site, stacks.map(b.stack), b.time_ns - first, {}};
      if (auto it = views.find(b.storage); b.storage && it != views.end()) a.views = it->second;
      return a;
    };
    auto block = s.blocks.begin();
    for (auto [addr, size] : s.segments) {
      for (; block != s.blocks.end() && block->first < addr; ++block) dev.loose.push_back(describe(block->second));
      SegmentAt seg{addr, size, {}};
      for (; block != s.blocks.end() && block->first < addr + size; ++block) seg.blocks.push_back(describe(block->second));
      dev.segments.push_back(std::move(seg));
    }
    for (; block != s.blocks.end(); ++block) dev.loose.push_back(describe(block->second));
    out.devices.push_back(std::move(dev));
  }
  return out;
}

}  // namespace memlens::analysis
