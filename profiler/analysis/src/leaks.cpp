// leaks: what is alive when the trace ends, and growth: sites where memory from earlier
// steps survives and keeps piling up (a loss kept with its graph). At each step boundary a
// site's survivors are its live bytes allocated in steps before the one just ended; one
// per-step tensor that grows because its inputs grow (length-sorted batches) is replaced
// every step, so it never survives and is not growth. Parameters, gradients, optimiser
// state and anything allocated before the first step are expected to live on, so they
// are not leaks.
#include <absl/container/flat_hash_map.h>

#include <algorithm>

#include "analyses.hpp"

namespace memlens::analysis {

namespace {

using profiler::Event;
using profiler::EventKind;

bool expected_to_live(const LiveBlock& b, std::uint64_t steps) {
  if (b.category == Category::Parameter || b.category == Category::Gradient || b.category == Category::OptimizerState)
    return true;
  return steps > 0 && b.step == 0;
}

class LeakAnalysis final : public Analysis {
 public:
  KindSet after_kinds() const override { return kinds(EventKind::Alloc, EventKind::FreeRequested, EventKind::Step); }
  void after(const Event& e, const PassState& s) override {
    // Bytes allocated in the current step and still alive, by site.
    if (e.kind == EventKind::Alloc && s.block && s.block->step > 0) {
      if (this_step_[s.block->site] == 0) this_step_sites_.push_back(s.block->site);
      this_step_[s.block->site] += s.block->size;
      return;
    }
    if (e.kind == EventKind::FreeRequested && s.block && s.block->step > 0 && s.block->step == s.step) {
      this_step_[s.block->site] -= s.block->size;
      return;
    }
    if (e.kind != EventKind::Step) return;
    // Every site with stepped memory now, and every site tracked before (now perhaps 0).
    const PerSite<std::uint64_t>& live = s.live.stepped_bytes_by_site();
    for (SiteId site = 0; site < std::max(live.size(), trends_.size()); ++site) {
      std::uint64_t v = live.get(site) - this_step_.get(site);
      Trend& t = trends_[site];
      if (t.observed == 0) {
        if (v == 0) continue;
        t.first = v;
        t.time_ns = s.since_start(e.time_ns);
      } else if (v > t.last) {
        ++t.rises;
      } else if (v < t.last) {
        ++t.falls;
      }
      t.last = v;
      ++t.observed;
    }
    for (SiteId site : this_step_sites_) this_step_[site] = 0;
    this_step_sites_.clear();
  }

  void finish(const PassState& s, Report& r) override {
    LeakSection& out = r.leaks;
    absl::flat_hash_map<std::uint64_t, LeakGroup> groups;
    s.live.for_each_block([&](const LiveBlock& b) {
      if (expected_to_live(b, s.step)) {
        out.expected_bytes += b.size;
        return;
      }
      LeakGroup& g = groups[std::uint64_t{b.site} << 8 | static_cast<std::uint8_t>(b.category)];
      if (g.blocks == 0 || b.time_ns < g.time_ns) g.time_ns = s.since_start(b.time_ns);
      g.site = b.site, g.category = b.category;
      g.bytes += b.size, ++g.blocks;
      out.leaked_bytes += b.size, ++out.leaked_blocks;
    });
    for (auto& [k, g] : groups) out.alive_at_end.push_back(g);
    std::sort(out.alive_at_end.begin(), out.alive_at_end.end(),
              [](const LeakGroup& a, const LeakGroup& b) { return a.bytes != b.bytes ? a.bytes > b.bytes : a.site < b.site; });

    // Growth: rising at (nearly) every boundary, never falling, over at least 3 intervals.
    for (SiteId site = 0; site < trends_.size(); ++site) {
      const Trend& t = trends_.at(site);
      std::uint64_t intervals = t.observed > 0 ? t.observed - 1 : 0;
      if (intervals < 3 || t.falls > 0 || t.rises * 4 < intervals * 3 || t.last <= t.first) continue;
      GrowthLeak g;
      g.site = site;
      g.steps_observed = t.observed;
      g.first_bytes = t.first, g.last_bytes = t.last;
      g.time_ns = t.time_ns;
      g.bytes_per_step = static_cast<double>(t.last - t.first) / static_cast<double>(intervals);
      out.growth.push_back(g);
    }
    std::sort(out.growth.begin(), out.growth.end(), [](const GrowthLeak& a, const GrowthLeak& b) {
      return a.bytes_per_step != b.bytes_per_step ? a.bytes_per_step > b.bytes_per_step : a.site < b.site;
    });
  }

 private:
  struct Trend {
    std::uint64_t first = 0, last = 0, observed = 0, rises = 0, falls = 0, time_ns = 0;
  };
  PerSite<Trend> trends_;
  PerSite<std::uint64_t> this_step_;     // allocated since the last boundary, still alive
  std::vector<SiteId> this_step_sites_;  // the sites this_step_ holds a value for
};

}  // namespace

std::unique_ptr<Analysis> make_leak_analysis() { return std::make_unique<LeakAnalysis>(); }

}  // namespace memlens::analysis
