// timeline: allocated and reserved over time per device, in at most N buckets. The
// bucket width starts at 1 µs and doubles (merging neighbours) whenever the trace
// outgrows N, so one pass needs no idea of the trace's length and O(N) memory. Per
// bucket it keeps the allocated bytes per category, and the sites whose live bytes
// changed in it; at the end the 8 sites with the most live memory get a value per bucket.
#include <absl/container/flat_hash_map.h>

#include <algorithm>

#include "analyses.hpp"

namespace memlens::analysis {

namespace {

using profiler::Event;
using profiler::EventKind;

class TimelineAnalysis final : public Analysis {
 public:
  KindSet after_kinds() const override {
    return kinds(EventKind::Step, EventKind::ScopeBegin, EventKind::ScopeEnd, EventKind::Alloc, EventKind::FreeRequested,
                 EventKind::SegmentAlloc, EventKind::SegmentFree);
  }
  void after(const Event& e, const PassState& s) override {
    if (e.kind == EventKind::Step) {
      steps_.push_back(s.since_start(e.time_ns));
      return;
    }
    if (e.kind == EventKind::ScopeBegin) {
      open_[e.thread].push_back(spans_.size());
      if (spans_.size() < kMaxScopes) spans_.push_back({s.name(e), e.thread, s.since_start(e.time_ns), 0});
      return;
    }
    if (e.kind == EventKind::ScopeEnd) {
      auto& stack = open_[e.thread];
      if (stack.empty()) return;
      if (stack.back() < spans_.size()) spans_[stack.back()].end_ns = s.since_start(e.time_ns);
      stack.pop_back();
      return;
    }
    if (e.kind != EventKind::Alloc && e.kind != EventKind::FreeRequested && e.kind != EventKind::SegmentAlloc &&
        e.kind != EventKind::SegmentFree)
      return;
    if (e.device >= series_.size()) series_.resize(e.device + 1u), changes_.resize(e.device + 1u);
    TimelineSeries& ts = series_[e.device];
    ts.device = e.device;
    if (ts.bucket_ns == 0) ts.bucket_ns = 1000;
    const DeviceState& d = s.live.device(e.device);
    std::uint64_t t = s.since_start(e.time_ns);
    std::size_t max = std::max<std::size_t>(s.options.timeline_buckets, 2);
    while (t / ts.bucket_ns >= max) coarsen(ts, changes_[e.device]);
    std::uint64_t start = t / ts.bucket_ns * ts.bucket_ns;
    // Buckets with no event between the last one and this one hold the last value.
    while (!ts.buckets.empty() && ts.buckets.back().time_ns + ts.bucket_ns < start) {
      TimelineBucket gap = ts.buckets.back();
      gap.time_ns += ts.bucket_ns;
      gap.allocated_min = gap.allocated_max = gap.allocated_last;
      gap.reserved_max = gap.reserved_last;
      ts.buckets.push_back(gap);
    }
    TimelineBucket now;  // this moment, as a bucket of its own
    now.time_ns = start;
    now.allocated_min = now.allocated_max = now.allocated_last = d.allocated;
    now.reserved_max = now.reserved_last = d.reserved;
    now.category_last = d.by_category;
    if (ts.buckets.empty() || ts.buckets.back().time_ns != start) ts.buckets.push_back(now);
    else absorb(ts.buckets.back(), now);
    if ((e.kind == EventKind::Alloc || e.kind == EventKind::FreeRequested) && s.block) {
      SiteId site = s.block->site;  // a free names the site of the block it frees
      changes_[e.device].set(ts.buckets.size() - 1, site, d.by_site.get(site));
    }
  }

  // Copies out: a pass still reading (a recording followed) goes on from this state.
  void finish(const PassState&, Report& r) override {
    for (std::size_t d = 0; d < series_.size(); ++d) {
      if (!series_[d].bucket_ns) continue;
      TimelineSeries ts = series_[d];
      top_sites(ts, changes_[d]);
      r.timeline.series.push_back(std::move(ts));
    }
    r.timeline.step_times_ns = steps_;
    r.timeline.scopes = spans_;
    for (auto& span : r.timeline.scopes)
      if (span.end_ns == 0) span.end_ns = r.duration_ns;  // still open when the trace ended
  }

 private:
  // One device's sites whose live bytes changed, per bucket: each site once, with its
  // live bytes at the bucket's last change.
  struct Changes {
    std::vector<std::vector<std::pair<SiteId, std::uint64_t>>> buckets;
    PerSite<std::pair<std::size_t, std::size_t>> where;  // site -> (its bucket + 1, index there); 0: none

    void set(std::size_t bucket, SiteId site, std::uint64_t bytes) {
      if (bucket >= buckets.size()) buckets.resize(bucket + 1);
      auto& w = where[site];
      if (w.first == bucket + 1) {
        buckets[bucket][w.second].second = bytes;
        return;
      }
      w = {bucket + 1, buckets[bucket].size()};
      buckets[bucket].emplace_back(site, bytes);
    }
  };

  // Replays the per-bucket changes twice: to find the sites with the most live memory,
  // then to give each bucket their values.
  static void top_sites(TimelineSeries& ts, const Changes& changes) {
    absl::flat_hash_map<SiteId, std::uint64_t> now, most;
    for (const auto& c : changes.buckets)
      for (auto [site, bytes] : c) {
        now[site] = bytes;
        most[site] = std::max(most[site], bytes);
      }
    std::vector<std::pair<std::uint64_t, SiteId>> ranked;
    for (auto [site, bytes] : most)
      if (bytes > 0) ranked.emplace_back(bytes, site);
    std::sort(ranked.begin(), ranked.end(),
              [](auto& a, auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
    for (std::size_t i = 0; i < ranked.size() && i < 8; ++i) ts.top_sites.push_back(ranked[i].second);
    now.clear();
    for (std::size_t i = 0; i < ts.buckets.size(); ++i) {
      if (i < changes.buckets.size())
        for (auto [site, bytes] : changes.buckets[i]) now[site] = bytes;
      for (std::size_t k = 0; k < ts.top_sites.size(); ++k) {
        auto it = now.find(ts.top_sites[k]);
        ts.buckets[i].site_last[k] = it == now.end() ? 0 : it->second;
      }
    }
  }

  static void coarsen(TimelineSeries& ts, Changes& changes) {
    changes.buckets.resize(ts.buckets.size());
    Changes merged;
    std::size_t into = 0;
    for (std::size_t i = 0; i < ts.buckets.size(); ++i) {
      std::uint64_t start = ts.buckets[i].time_ns / (ts.bucket_ns * 2) * (ts.bucket_ns * 2);
      if (i > 0 && ts.buckets[i - 1].time_ns / (ts.bucket_ns * 2) * (ts.bucket_ns * 2) != start) ++into;
      merged.buckets.resize(into + 1);
      for (auto [site, bytes] : changes.buckets[i]) merged.set(into, site, bytes);
    }
    changes = std::move(merged);
    coarsen(ts);
  }

  // `later` folded into `into`: extremes of both, the values at the end of `later`.
  static void absorb(TimelineBucket& into, const TimelineBucket& later) {
    into.allocated_min = std::min(into.allocated_min, later.allocated_min);
    into.allocated_max = std::max(into.allocated_max, later.allocated_max);
    into.reserved_max = std::max(into.reserved_max, later.reserved_max);
    into.allocated_last = later.allocated_last;
    into.reserved_last = later.reserved_last;
    into.category_last = later.category_last;
  }

  static void coarsen(TimelineSeries& ts) {
    ts.bucket_ns *= 2;
    std::vector<TimelineBucket> merged;
    for (const TimelineBucket& b : ts.buckets) {
      std::uint64_t start = b.time_ns / ts.bucket_ns * ts.bucket_ns;
      if (merged.empty() || merged.back().time_ns != start) {
        merged.push_back(b);
        merged.back().time_ns = start;
        continue;
      }
      absorb(merged.back(), b);
    }
    ts.buckets = std::move(merged);
  }
  static constexpr std::size_t kMaxScopes = 100000;
  std::vector<TimelineSeries> series_;
  std::vector<std::uint64_t> steps_;
  std::vector<ScopeSpan> spans_;
  std::vector<Changes> changes_;                                       // per device
  absl::flat_hash_map<std::uint32_t, std::vector<std::size_t>> open_;  // per thread: indexes of open scopes
};

}  // namespace

std::unique_ptr<Analysis> make_timeline_analysis() { return std::make_unique<TimelineAnalysis>(); }

}  // namespace memlens::analysis
