#pragma once
// The analyses one pass feeds: each sees every event, before and after LiveMemory
// applies it, and writes its section of the Report at the end. finish() may come more
// than once, between events too (a recording followed while it runs): it copies its
// state out and leaves the pass able to go on.
#include <memory>
#include <optional>
#include <string>

#include "live_memory.hpp"
#include "memlens/analysis/analyze.hpp"

namespace memlens::analysis {

struct PassState {
  const profiler::TraceReader& trace;
  const AnalysisOptions& options;
  const LiveMemory& live;
  std::uint64_t first_time_ns = 0;
  std::uint64_t event_index = 0;
  std::uint64_t step = 0;            // step boundaries seen so far
  SiteId site = 0;                   // the current event's site
  const LiveBlock* block = nullptr;  // what LiveMemory::apply returned for it (after() only)

  std::uint64_t since_start(std::uint64_t t) const { return t > first_time_ns ? t - first_time_ns : 0; }
  const std::string& name(const profiler::Event& e) const { return trace.string(e.name()); }
};

// A set of event kinds, one bit per kind: an analysis is called for the kinds it reads
// only, so the pass spends nothing on the others.
using KindSet = std::uint32_t;
static_assert(profiler::kEventKindCount < 32, "a KindSet holds every kind");
template <class... K>
constexpr KindSet kinds(K... k) {
  return ((KindSet{1} << static_cast<unsigned>(k)) | ... | KindSet{0});
}

class Analysis {
 public:
  virtual ~Analysis() = default;
  // The kinds before() and after() are called for.
  virtual KindSet before_kinds() const { return 0; }
  virtual KindSet after_kinds() const = 0;
  virtual void before(const profiler::Event&, const PassState&) {}
  virtual void after(const profiler::Event& e, const PassState& s) = 0;
  virtual void finish(const PassState& s, Report& r) = 0;
};

std::unique_ptr<Analysis> make_peak_analysis();
std::unique_ptr<Analysis> make_leak_analysis();
std::unique_ptr<Analysis> make_broadcast_analysis();
std::unique_ptr<Analysis> make_contiguity_analysis();
std::unique_ptr<Analysis> make_transfer_analysis();
std::unique_ptr<Analysis> make_churn_analysis();
std::unique_ptr<Analysis> make_fragmentation_analysis();
std::unique_ptr<Analysis> make_timeline_analysis();
// After the pass, when the trace has OOMs: replays each device's requests through the
// run's configuration and the usual remedies, and says which would have fit each OOM.
void replay_ooms(const profiler::TraceReader& trace, Report& r);
// Every section's results as Report::findings, in one sentence each.
void gather_findings(Report& r);

}  // namespace memlens::analysis
