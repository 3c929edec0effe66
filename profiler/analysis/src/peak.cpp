// peak: per device, when allocated and reserved peaked and what was live then. A new
// high is snapshotted only when memory is about to fall from it, so a rising trace costs
// one snapshot per local maximum, not one per allocation. A block the snapshot saw unnamed
// that its op names when it ends (the op's event comes after the op freed its own
// temporaries, which took the snapshot) is counted under that name: the role it had all
// along (LiveMemory names what no event names).
#include <algorithm>

#include "analyses.hpp"

namespace memlens::analysis {

namespace {

using profiler::Event;
using profiler::EventKind;

class PeakAnalysis final : public Analysis {
 public:
  KindSet before_kinds() const override { return kinds(EventKind::FreeRequested, EventKind::SegmentFree); }
  KindSet after_kinds() const override {
    return kinds(EventKind::Alloc, EventKind::FreeRequested, EventKind::SegmentAlloc, EventKind::SegmentFree, EventKind::Oom,
                 EventKind::Op, EventKind::Copy, EventKind::Category);
  }
  void before(const Event& e, const PassState& s) override {
    if (e.kind != EventKind::FreeRequested && e.kind != EventKind::SegmentFree) return;
    grow(e.device);
    Track& t = tracks_[e.device];
    if (t.alloc_dirty) snapshot(s, e.device, t.alloc_time, t.peak_alloc_at, t.alloc_unnamed), t.alloc_dirty = false;
    if (t.res_dirty) snapshot(s, e.device, t.res_time, t.peak_res_at, t.res_unnamed), t.res_dirty = false;
  }

  void after(const Event& e, const PassState& s) override {
    if (e.kind == EventKind::Op || e.kind == EventKind::Copy || e.kind == EventKind::Category) return name_unnamed(e, s);
    grow(e.device);
    Track& t = tracks_[e.device];
    const DeviceState& d = s.live.device(e.device);
    switch (e.kind) {
      case EventKind::Alloc: {
        ++t.report.allocs, t.report.allocated_total += e.alloc.size;
        SiteBytes& b = by_site_[s.site];
        b.site = s.site, b.bytes += e.alloc.size, ++b.blocks;
        if (s.block && s.block->storage && s.block->category == Category::Unknown) {
          if (born_.size() == kBornKept) born_.erase(born_.begin());
          born_.push_back({s.block->storage, e.thread});
        }
        break;
      }
      case EventKind::FreeRequested:
        ++t.report.frees;
        break;
      case EventKind::SegmentAlloc:
        ++t.report.segment_allocs;
        break;
      case EventKind::SegmentFree:
        ++t.report.segment_frees;
        break;
      case EventKind::Oom:
        ++t.report.ooms;
        break;
      default:
        return;
    }
    if (d.allocated > t.peak_alloc) t.peak_alloc = d.allocated, t.alloc_time = s.since_start(e.time_ns), t.alloc_dirty = true;
    if (d.reserved > t.peak_res) t.peak_res = d.reserved, t.res_time = s.since_start(e.time_ns), t.res_dirty = true;
  }

  void finish(const PassState& s, Report& r) override {
    const auto& devices = s.trace.header().devices;
    for (std::size_t i = 0; i < tracks_.size(); ++i) {
      auto dev = static_cast<std::uint8_t>(i);
      Track& t = tracks_[i];
      if (!s.live.device(dev).touched) continue;
      if (t.alloc_dirty) snapshot(s, dev, t.alloc_time, t.peak_alloc_at, t.alloc_unnamed);
      if (t.res_dirty) snapshot(s, dev, t.res_time, t.peak_res_at, t.res_unnamed);
      DeviceReport d = t.report;
      d.index = dev;
      d.name = i < devices.size() ? devices[i].name : "device " + std::to_string(i);
      d.capacity = i < devices.size() ? devices[i].capacity : 0;
      d.final_allocated = s.live.device(dev).allocated;
      d.final_reserved = s.live.device(dev).reserved;
      d.peak_allocated = t.peak_alloc_at;
      d.peak_reserved = t.peak_res_at;
      r.devices.push_back(std::move(d));
    }
    for (SiteId site = 0; site < by_site_.size(); ++site)
      if (by_site_.at(site).blocks) r.allocations_by_site.push_back(by_site_.at(site));
    std::sort(r.allocations_by_site.begin(), r.allocations_by_site.end(),
              [](const SiteBytes& a, const SiteBytes& b) { return a.bytes != b.bytes ? a.bytes > b.bytes : a.site < b.site; });
  }

 private:
  // A storage born unnamed, and the thread whose op may still name it.
  struct Unnamed {
    std::uint64_t storage = 0;
    std::uint32_t thread = 0;
  };
  static constexpr std::size_t kBornKept = 64;  // an op's own allocations, with room to spare

  struct Track {
    DeviceReport report;
    std::uint64_t peak_alloc = 0, peak_res = 0, alloc_time = 0, res_time = 0;
    bool alloc_dirty = false, res_dirty = false;
    LiveAt peak_alloc_at, peak_res_at;
    std::vector<Unnamed> alloc_unnamed, res_unnamed;  // what each snapshot saw unnamed, still to be named
  };
  void grow(std::uint8_t d) {
    if (d >= tracks_.size()) tracks_.resize(d + 1u);
  }
  void snapshot(const PassState& s, std::uint8_t d, std::uint64_t time, LiveAt& out, std::vector<Unnamed>& seen) const {
    out = s.live.live_at(d, time, s.options.top_sites);
    seen.clear();
    for (const Unnamed& u : born_)
      if (const LiveBlock* b = s.live.block_of(u.storage); b && b->device == d && b->category == Category::Unknown)
        seen.push_back(u);
  }

  // After an event that may name a block (an op, a copy, a category): the snapshots'
  // unnamed blocks it named move to their category; an op ends its thread's wait.
  void name_unnamed(const Event& e, const PassState& s) {
    auto name = [&](LiveAt& at, std::vector<Unnamed>& seen) {
      std::erase_if(seen, [&](const Unnamed& u) {
        const LiveBlock* b = s.live.block_of(u.storage);
        if (b && b->category != Category::Unknown) move_unknown(at, b->category, b->size);
        return !b || b->category != Category::Unknown || (e.kind == EventKind::Op && u.thread == e.thread);
      });
    };
    for (Track& t : tracks_) name(t.peak_alloc_at, t.alloc_unnamed), name(t.peak_res_at, t.res_unnamed);
    if (e.kind == EventKind::Op) std::erase_if(born_, [&](const Unnamed& u) { return u.thread == e.thread; });
  }

  static void move_unknown(LiveAt& at, Category to, std::uint64_t bytes) {
    auto entry = [&](Category c) -> CategoryBytes& {
      for (auto& cb : at.by_category)
        if (cb.category == c) return cb;
      return at.by_category.emplace_back(CategoryBytes{c, 0, 0});
    };
    CategoryBytes& from = entry(Category::Unknown);
    from.bytes -= std::min(from.bytes, bytes), from.blocks -= std::min<std::uint64_t>(from.blocks, 1);
    CategoryBytes& into = entry(to);
    into.bytes += bytes, ++into.blocks;
    std::erase_if(at.by_category, [](const CategoryBytes& c) { return c.blocks == 0; });
    std::sort(at.by_category.begin(), at.by_category.end(), [](const CategoryBytes& a, const CategoryBytes& b) {
      return a.bytes != b.bytes ? a.bytes > b.bytes : a.category < b.category;
    });
  }

  std::vector<Track> tracks_;
  std::vector<Unnamed> born_;  // born unnamed since their thread's last op, newest last
  PerSite<SiteBytes> by_site_;
};

}  // namespace

std::unique_ptr<Analysis> make_peak_analysis() { return std::make_unique<PeakAnalysis>(); }

}  // namespace memlens::analysis
