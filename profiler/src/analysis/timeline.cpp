// timeline: allocated and reserved over time per device, in at most N buckets. The
// bucket width starts at 1 µs and doubles (merging neighbours) whenever the trace
// outgrows N, so one pass needs no idea of the trace's length and O(N) memory.
#include <absl/container/flat_hash_map.h>

#include <algorithm>

#include "analyses.hpp"

namespace memlens::analysis {

namespace {

using profiler::Event;
using profiler::EventKind;

class TimelineAnalysis final : public Analysis {
 public:
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
    if (e.device >= series_.size()) series_.resize(e.device + 1u);
    TimelineSeries& ts = series_[e.device];
    ts.device = e.device;
    if (ts.bucket_ns == 0) ts.bucket_ns = 1000;
    const DeviceState& d = s.live.device(e.device);
    std::uint64_t t = s.since_start(e.time_ns);
    std::size_t max = std::max<std::size_t>(s.options.timeline_buckets, 2);
    while (t / ts.bucket_ns >= max) coarsen(ts);
    std::uint64_t start = t / ts.bucket_ns * ts.bucket_ns;
    // Buckets with no event between the last one and this one hold the last value.
    while (!ts.buckets.empty() && ts.buckets.back().time_ns + ts.bucket_ns < start) {
      TimelineBucket gap = ts.buckets.back();
      gap.time_ns += ts.bucket_ns;
      gap.allocated_min = gap.allocated_max = gap.allocated_last;
      gap.reserved_max = gap.reserved_last;
      ts.buckets.push_back(gap);
    }
    if (ts.buckets.empty() || ts.buckets.back().time_ns != start) {
      TimelineBucket b;
      b.time_ns = start;
      b.allocated_min = b.allocated_max = d.allocated;
      b.reserved_max = d.reserved;
      ts.buckets.push_back(b);
    }
    TimelineBucket& b = ts.buckets.back();
    b.allocated_min = std::min(b.allocated_min, d.allocated);
    b.allocated_max = std::max(b.allocated_max, d.allocated);
    b.reserved_max = std::max(b.reserved_max, d.reserved);
    b.allocated_last = d.allocated;
    b.reserved_last = d.reserved;
    b.category_last = d.by_category;
  }

  void finish(const PassState&, Report& r) override {
    for (auto& ts : series_)
      if (ts.bucket_ns) r.timeline.series.push_back(std::move(ts));
    r.timeline.step_times_ns = std::move(steps_);
    for (auto& span : spans_)
      if (span.end_ns == 0) span.end_ns = r.duration_ns;  // still open when the trace ended
    r.timeline.scopes = std::move(spans_);
  }

 private:
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
      TimelineBucket& m = merged.back();
      m.allocated_min = std::min(m.allocated_min, b.allocated_min);
      m.allocated_max = std::max(m.allocated_max, b.allocated_max);
      m.reserved_max = std::max(m.reserved_max, b.reserved_max);
      m.allocated_last = b.allocated_last;
      m.reserved_last = b.reserved_last;
      m.category_last = b.category_last;
    }
    ts.buckets = std::move(merged);
  }
  static constexpr std::size_t kMaxScopes = 100000;
  std::vector<TimelineSeries> series_;
  std::vector<std::uint64_t> steps_;
  std::vector<ScopeSpan> spans_;
  absl::flat_hash_map<std::uint32_t, std::vector<std::size_t>> open_;  // per thread: indexes of open scopes
};

}  // namespace

std::unique_ptr<Analysis> make_timeline_analysis() { return std::make_unique<TimelineAnalysis>(); }

}  // namespace memlens::analysis
