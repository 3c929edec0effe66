// churn: a buffer allocated afresh every step at one site, same size, and freed again:
// one preallocated buffer refilled with copy_ would do. Sites that run ops are left out
// (an op's output is a value, not a buffer to reuse), and so are sites that copy between
// devices or copy for layout (the transfer and contiguity reports speak of those, with
// advice of their own). Also temporaries: blocks freed within a few events of their
// allocation.
#include <absl/container/flat_hash_map.h>

#include <algorithm>

#include "analyses.hpp"

namespace memlens::analysis {

namespace {

using profiler::Event;
using profiler::EventKind;

class ChurnAnalysis final : public Analysis {
 public:
  KindSet after_kinds() const override {
    return kinds(EventKind::Op, EventKind::Copy, EventKind::Alloc, EventKind::FreeRequested);
  }
  void after(const Event& e, const PassState& s) override {
    switch (e.kind) {
      case EventKind::Op:
        op_sites_[s.site] = 1;
        return;
      case EventKind::Copy:
        // A copy that makes its own destination (a move between devices, contiguous,
        // clone, an index) is an op's output, which the step computes: no buffer to keep.
        // Only copy_ writes into a buffer the program allocated.
        if (e.device != e.copy.src_device || e.copy.reason != profiler::CopyReason::Copy) op_sites_[s.site] = 1;
        return;
      case EventKind::Alloc: {
        if (s.step == 0) return;  // set-up, before the first step boundary
        last_alloc_step_ = s.step;
        Repeat& r = repeats_[{s.site, e.alloc.size}];
        ++r.allocs;
        if (r.steps == 0 || r.last_step != s.step) {
          if (r.steps == 0) r.first_step = s.step, r.first_ns = s.since_start(e.time_ns);
          ++r.steps, r.last_step = s.step;
        }
        return;
      }
      case EventKind::FreeRequested: {
        const LiveBlock* b = s.block;
        if (!b) return;
        if (s.event_index - b->event_index <= s.options.temporary_window) {
          TemporarySite& t = temporaries_[b->site];
          t.site = b->site;
          ++t.count;
          t.bytes += b->size;
        }
        return;
      }
      default:
        return;
    }
  }

  void finish(const PassState& s, Report& r) override {
    ChurnSection& out = r.churn;
    out.window_events = s.options.temporary_window;
    // Every block allocated after step 0 was freed unless it is alive now: counting the
    // survivors here spares the pass a lookup per free.
    s.live.for_each_block([&](const LiveBlock& b) {
      if (b.step > 0)
        if (auto it = repeats_.find({b.site, b.size}); it != repeats_.end()) ++it->second.alive;
    });
    for (auto& [k, v] : repeats_) {
      if (op_sites_.get(k.first) || v.steps < 3) continue;
      const std::uint64_t freed = v.allocs - v.alive;
      std::uint64_t possible = last_alloc_step_ - v.first_step + 1;  // steps since the site first allocated
      if (v.steps * 10 < possible * 9 || freed * 10 < v.allocs * 9) continue;
      out.findings.push_back({k.first, k.second, v.allocs, v.steps, v.first_ns});
    }
    std::sort(out.findings.begin(), out.findings.end(), [](const ChurnFinding& a, const ChurnFinding& b) {
      if (a.size * a.allocs != b.size * b.allocs) return a.size * a.allocs > b.size * b.allocs;
      return a.site != b.site ? a.site < b.site : a.size < b.size;
    });
    for (SiteId site = 0; site < temporaries_.size(); ++site) {
      const TemporarySite& t = temporaries_.at(site);
      if (t.count == 0) continue;
      out.temporaries.push_back(t);
      out.temporary_count += t.count;
      out.temporary_bytes += t.bytes;
    }
    std::stable_sort(out.temporaries.begin(), out.temporaries.end(), [](const TemporarySite& a, const TemporarySite& b) {
      return a.count != b.count ? a.count > b.count : a.site < b.site;
    });
    if (out.temporaries.size() > s.options.top_sites) out.temporaries.resize(s.options.top_sites);
  }

 private:
  struct Repeat {
    std::uint64_t allocs = 0, steps = 0, first_step = 0, last_step = 0, alive = 0, first_ns = 0;
  };
  std::uint64_t last_alloc_step_ = 0;                                      // the last step that allocated anything
  PerSite<std::uint8_t> op_sites_;                                         // and sites that copy between devices or for layout
  absl::flat_hash_map<std::pair<SiteId, std::uint64_t>, Repeat> repeats_;  // site, size
  PerSite<TemporarySite> temporaries_;
};

}  // namespace

std::unique_ptr<Analysis> make_churn_analysis() { return std::make_unique<ChurnAnalysis>(); }

}  // namespace memlens::analysis
