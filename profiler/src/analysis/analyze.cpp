// The pass: reads the trace once, keeps LiveMemory current, feeds every analysis, then
// gathers the sections' findings into one list.
#include "memlens/analysis/analyze.hpp"

#include <absl/container/flat_hash_map.h>

#include <algorithm>

#include "analyses.hpp"
#include "site_table.hpp"
#include "memlens/runtime/memory.hpp"

namespace memlens::analysis {

namespace {

using profiler::Event;
using profiler::EventKind;


std::string shapes_text(const std::vector<ShapeRecord>& inputs) {
  std::string out;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    out += (i == 0 ? "" : i + 1 == inputs.size() ? " and " : ", ") + shape_text(inputs[i]);
  return out;
}

std::string times(std::uint64_t n) { return std::to_string(n) + (n == 1 ? " time" : " times"); }

std::string factor_text(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, f >= 10 ? "%.0fx" : "%.1fx", f);
  return buf;
}

// "; replay: expandable_segments:True would have fit it" (the first remedy that does).
std::string oom_remedy(const OomReport& o) {
  if (o.replay.empty()) return "";
  if (o.replay.front().fits) return "";
  for (std::size_t i = 1; i < o.replay.size(); ++i)
    if (o.replay[i].fits) return "; replay: " + o.replay[i].config + " would have fit it";
  return "; replay: no allocator setting fits it, only less memory held";
}

void gather_findings(Report& r) {
  auto add = [&](FindingKind k, SiteId site, std::uint64_t b, std::string msg, std::uint64_t time) {
    r.findings.push_back({k, site, b, std::move(msg), time});
  };
  for (const OomReport& o : r.fragmentation.ooms)
    add(FindingKind::Oom, o.site, o.requested,
        "out of memory asking for " + bytes_text(o.requested) + ": " + bytes_text(o.device_free) + " free, " + bytes_text(o.reserved) +
            " reserved, " + bytes_text(o.allocated) + " allocated, largest free block " + bytes_text(o.largest_free_block) +
            oom_remedy(o),
        o.time_ns);
  for (const GrowthLeak& g : r.leaks.growth)
    add(FindingKind::Growth, g.site, g.last_bytes,
        "live memory grows by " + bytes_text(static_cast<std::uint64_t>(g.bytes_per_step)) + " per step over " +
            std::to_string(g.steps_observed) + " steps (" + bytes_text(g.first_bytes) + " -> " + bytes_text(g.last_bytes) +
            "): something keeps every step's tensors alive",
        g.time_ns);
  // A snapshot taken mid-run holds the run's working set: listed, not found to leak.
  for (const LeakGroup& l : r.ends_mid_run ? std::vector<LeakGroup>{} : r.leaks.alive_at_end)
    add(FindingKind::Leak, l.site, l.bytes,
        bytes_text(l.bytes) + " in " + std::to_string(l.blocks) + (l.blocks == 1 ? " block" : " blocks") + " (" +
            std::string(profiler::category_name(l.category)) + ") still alive at the end of the trace",
        l.time_ns);
  for (const BroadcastFinding& b : r.broadcast.findings)
    add(FindingKind::Broadcast, b.site, b.bytes,
        b.op + ": " + shapes_text(b.inputs) + " broadcast to " + shape_text(b.output) + ", " + factor_text(b.factor) +
            " the largest input: " + bytes_text(b.bytes) + " each, " + times(b.count),
        b.time_ns);
  for (const MaterializedExpand& m : r.broadcast.materialized)
    add(FindingKind::MaterializedExpand, m.site, m.bytes,
        "a copy materialised an expanded tensor: " + bytes_text(m.bytes) + " from a " + bytes_text(m.source_bytes) + " block, " +
            times(m.count),
        m.time_ns);
  for (const LayoutCopy& c : r.contiguity.copies)
    if (c.repeated)
      add(FindingKind::LayoutCopy, c.site, c.bytes,
        std::string(profiler::copy_reason_name(c.reason)) + " copy of a non-contiguous input" +
            (c.view_chain.empty() ? "" : " (after " + c.view_chain + ")") + ": " + times(c.count) + ", " + bytes_text(c.bytes) +
            " in all",
        c.time_ns);
  for (const ResentTransfer& t : r.transfers.resent)
    add(FindingKind::ResentTransfer, t.site, t.bytes * t.times,
        std::to_string(t.sources) + (t.sources == 1 ? " source" : " sources") + " of " + bytes_text(t.bytes) +
            " sent again and again, each in " + std::to_string(t.steps) + " steps (" + std::to_string(t.times) +
            " sends): move the data to the device once, before the loop",
        t.time_ns);
  for (const ChurnFinding& c : r.churn.findings)
    add(FindingKind::Churn, c.site, c.size,
        "a fresh " + bytes_text(c.size) + " buffer every step (" + std::to_string(c.allocs) + " allocations in " +
            std::to_string(c.steps) + " steps): allocate it once and refill it with copy_",
        c.time_ns);
}

}  // namespace

std::string bytes_text(std::uint64_t bytes) { return format_bytes(static_cast<std::int64_t>(bytes)); }

std::string_view finding_kind_name(FindingKind k) {
  switch (k) {
    case FindingKind::Leak: return "leak";
    case FindingKind::Growth: return "growth";
    case FindingKind::Broadcast: return "broadcast";
    case FindingKind::MaterializedExpand: return "materialized_expand";
    case FindingKind::LayoutCopy: return "layout_copy";
    case FindingKind::ResentTransfer: return "resent_transfer";
    case FindingKind::Churn: return "churn";
    case FindingKind::Oom: return "oom";
  }
  return "?";
}

const DeviceReport* Report::device(std::string_view name) const {
  for (const auto& d : devices)
    if (d.name == name) return &d;
  return nullptr;
}

const DeviceReport* Report::main_device() const {
  const DeviceReport* best = nullptr;
  for (const auto& d : devices)
    if (d.name != "cpu" && (!best || d.peak_allocated.allocated > best->peak_allocated.allocated)) best = &d;
  return best ? best : device("cpu");
}

Report analyze(const profiler::TraceReader& trace, const AnalysisOptions& options, const Progress& progress) {
  Report r;
  r.program = trace.header().program;
  r.pid = trace.header().pid;
  r.notes = trace.header().notes;
  r.ends_mid_run = trace.header().ends_mid_run;

  LiveMemory live(trace.header().devices.size());
  PassState s{trace, options, live};
  SiteTable sites(trace, r.sites);
  std::vector<std::unique_ptr<Analysis>> analyses;
  // Order matters at finish: fragmentation reads the devices the peak analysis wrote.
  for (auto make : {make_peak_analysis, make_leak_analysis, make_broadcast_analysis, make_contiguity_analysis,
                    make_transfer_analysis, make_churn_analysis, make_fragmentation_analysis, make_timeline_analysis})
    analyses.push_back(make());

  std::uint64_t total = 0;
  for (const auto& c : trace.chunks()) total += c.count;
  std::uint64_t last_time = 0;
  bool first = true;
  trace.for_each([&](const Event& e) {
    if (first) s.first_time_ns = e.time_ns, first = false;
    last_time = std::max(last_time, e.time_ns);
    s.site = sites.map(e.site);
    s.block = nullptr;
    for (auto& a : analyses) a->before(e, s);
    s.block = live.apply(e, s.site, s.event_index, s.step);
    for (auto& a : analyses) a->after(e, s);
    if (e.kind == EventKind::Step) ++s.step;
    ++s.event_index;
    if (progress && (s.event_index & 0xffff) == 0) progress(s.event_index, total);
  });
  if (progress) progress(s.event_index, total);
  r.problem = trace.problem();  // after the pass, which may have met a chunk that does not decode
  r.events = s.event_index;
  r.steps = s.step;
  r.duration_ns = first ? 0 : last_time - s.first_time_ns;
  for (auto& a : analyses) a->finish(s, r);
  // Stacks are resolved only where a report shows them: at the peaks and the OOMs.
  StackTable stacks(trace, r.stacks);
  for (DeviceReport& d : r.devices) stacks.map_all(d.peak_allocated), stacks.map_all(d.peak_reserved);
  for (OomReport& o : r.fragmentation.ooms) stacks.map_all(o.holding);
  if (!r.fragmentation.ooms.empty()) replay_ooms(trace, r);
  gather_findings(r);
  return r;
}

}  // namespace memlens::analysis
