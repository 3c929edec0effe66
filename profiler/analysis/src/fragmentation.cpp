// fragmentation: reserved over allocated and the largest free block, when the reserve
// peaked, at every OOM, and at the end.
#include "analyses.hpp"

namespace memlens::analysis {

namespace {

using profiler::Event;
using profiler::EventKind;

double ratio(std::uint64_t reserved, std::uint64_t allocated) {
  return allocated ? static_cast<double>(reserved) / static_cast<double>(allocated) : 0;
}

class FragmentationAnalysis final : public Analysis {
 public:
  KindSet after_kinds() const override { return kinds(EventKind::Oom); }
  void after(const Event& e, const PassState& s) override {
    if (e.kind != EventKind::Oom) return;
    OomReport o;
    o.device = e.device;
    o.time_ns = s.since_start(e.time_ns);
    const profiler::FailureEvent& f = e.failure;
    o.requested = f.requested ? f.requested : f.size;
    o.device_free = f.device_free, o.reserved = f.reserved, o.allocated = f.allocated;
    o.largest_free_block = s.live.largest_free_block(e.device);
    o.site = s.site;
    o.event_index = s.event_index;
    o.holding = s.live.live_at(e.device, o.time_ns, s.options.top_sites);
    ooms_.push_back(o);
  }

  // Runs after the peak analysis has filled r.devices.
  void finish(const PassState& s, Report& r) override {
    FragmentationSection& out = r.fragmentation;
    for (const DeviceReport& d : r.devices) {
      const LiveAt& p = d.peak_reserved;
      out.points.push_back(
          {d.index, "peak reserved", p.time_ns, p.reserved, p.allocated, p.largest_free_block, ratio(p.reserved, p.allocated)});
      for (const OomReport& o : ooms_)
        if (o.device == d.index)
          out.points.push_back(
              {d.index, "oom", o.time_ns, o.reserved, o.allocated, o.largest_free_block, ratio(o.reserved, o.allocated)});
      out.points.push_back({d.index, "end", r.duration_ns, d.final_reserved, d.final_allocated,
                            s.live.largest_free_block(d.index), ratio(d.final_reserved, d.final_allocated)});
    }
    out.ooms = ooms_;
  }

 private:
  std::vector<OomReport> ooms_;
};

}  // namespace

std::unique_ptr<Analysis> make_fragmentation_analysis() { return std::make_unique<FragmentationAnalysis>(); }

}  // namespace memlens::analysis
