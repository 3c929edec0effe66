// The pass: reads the trace once, keeps LiveMemory current, feeds every analysis, then
// gathers the sections' findings into one list (findings.cpp).
#include "memlens/analysis/analyze.hpp"

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <array>

#include "analyses.hpp"
#include "site_table.hpp"
#include "memlens/common/byte_text.hpp"

namespace memlens::analysis {

using profiler::Event;
using profiler::EventKind;

std::string bytes_text(std::uint64_t bytes) { return format_byte_count(bytes); }

std::string_view finding_kind_name(FindingKind k) {
  switch (k) {
    case FindingKind::Leak:
      return "leak";
    case FindingKind::Growth:
      return "growth";
    case FindingKind::Broadcast:
      return "broadcast";
    case FindingKind::MaterializedExpand:
      return "materialized_expand";
    case FindingKind::LayoutCopy:
      return "layout_copy";
    case FindingKind::ResentTransfer:
      return "resent_transfer";
    case FindingKind::Churn:
      return "churn";
    case FindingKind::Oom:
      return "oom";
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

namespace {

std::string sites_note(const profiler::TraceReader& trace) {
  std::string modules;
  for (const std::string& m : trace.modules_without_lines()) modules += (modules.empty() ? "" : ", ") + m;
  if (modules.empty()) return "";
  return "sites in " + modules +
         " are <unknown>: no line tables (built without -g); build with -g, e.g. CMAKE_BUILD_TYPE=RelWithDebInfo";
}

}  // namespace

struct AnalysisPass::State {
  State(const profiler::TraceReader& trace, const AnalysisOptions& options)
      : trace(trace),
        options(options),
        live(trace.header().devices.size()),
        pass{trace, this->options, live},
        sites(trace, site_refs) {
    // Order matters at finish: fragmentation reads the devices the peak analysis wrote.
    for (auto make : {make_peak_analysis, make_leak_analysis, make_broadcast_analysis, make_contiguity_analysis,
                      make_transfer_analysis, make_churn_analysis, make_fragmentation_analysis, make_timeline_analysis})
      analyses.push_back(make());
    for (std::size_t k = 0; k < before.size(); ++k)
      for (auto& a : analyses) {
        if (a->before_kinds() >> k & 1) before[k].push_back(a.get());
        if (a->after_kinds() >> k & 1) after[k].push_back(a.get());
      }
  }

  const profiler::TraceReader& trace;
  const AnalysisOptions options;
  LiveMemory live;
  PassState pass;
  std::vector<SiteRef> site_refs{SiteRef{}};
  SiteTable sites;
  std::vector<std::unique_ptr<Analysis>> analyses;
  // Per kind, the analyses that read it, in the order above.
  std::array<std::vector<Analysis*>, profiler::kEventKindCount + 1> before, after;
  std::size_t next_chunk = 0;
  std::uint64_t last_time = 0;
};

AnalysisPass::AnalysisPass(const profiler::TraceReader& trace, const AnalysisOptions& options)
    : state_(std::make_unique<State>(trace, options)) {}

AnalysisPass::~AnalysisPass() = default;

std::uint64_t AnalysisPass::read_new_chunks(const Progress& progress) {
  State& st = *state_;
  PassState& s = st.pass;
  const std::vector<profiler::ChunkInfo> chunks = st.trace.chunks();
  if (st.next_chunk >= chunks.size()) return 0;
  std::uint64_t total = s.event_index;
  for (std::size_t i = st.next_chunk; i < chunks.size(); ++i) total += chunks[i].count;
  const std::uint64_t from = s.event_index;
  st.trace.for_each_from(
      st.next_chunk, [&](std::size_t i) { st.next_chunk = i + 1; },
      [&](const Event& e) {
        if (s.event_index == 0) s.first_time_ns = e.time_ns;
        st.last_time = std::max(st.last_time, e.time_ns);
        s.site = st.sites.map(e.site());
        s.block = nullptr;
        const auto k = static_cast<std::size_t>(e.kind);
        for (Analysis* a : st.before[k]) a->before(e, s);
        s.block = st.live.apply(e, s.site, s.event_index, s.step);
        for (Analysis* a : st.after[k]) a->after(e, s);
        if (e.kind == EventKind::Step) ++s.step;
        ++s.event_index;
        if (progress && (s.event_index & 0xffff) == 0) progress(s.event_index, total);
      });
  if (progress) progress(s.event_index, total);
  return s.event_index - from;
}

Report AnalysisPass::report(bool in_progress) {
  State& st = *state_;
  const profiler::TraceReader& trace = st.trace;
  PassState& s = st.pass;
  Report r;
  r.program = trace.header().program;
  r.pid = trace.header().pid;
  r.notes = trace.header().notes;
  r.ends_mid_run = trace.header().ends_mid_run || in_progress;
  r.sites = st.site_refs;
  r.problem = trace.problem();  // after the pass, which may have met a chunk that does not decode
  r.events = s.event_index;
  r.steps = s.step;
  r.duration_ns = s.event_index ? st.last_time - s.first_time_ns : 0;
  for (auto& a : st.analyses) a->finish(s, r);
  r.sites_note = sites_note(trace);  // before the stacks: their frames in system libraries are no concern
  // Stacks are resolved only where a report shows them: at the peaks and the OOMs.
  StackTable stacks(trace, r.stacks);
  for (DeviceReport& d : r.devices) stacks.map_all(d.peak_allocated), stacks.map_all(d.peak_reserved);
  for (OomReport& o : r.fragmentation.ooms) stacks.map_all(o.holding);
  if (!r.fragmentation.ooms.empty() && !in_progress) replay_ooms(trace, r);
  gather_findings(r);
  return r;
}

Report analyze(const profiler::TraceReader& trace, const AnalysisOptions& options, const Progress& progress) {
  AnalysisPass pass(trace, options);
  pass.read_new_chunks(progress);
  return pass.report();
}

}  // namespace memlens::analysis
