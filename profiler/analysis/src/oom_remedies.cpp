// Would a setting have fit the OOM? The device's requests, up to and past each OOM, go
// through memlens' caching allocator (PyTorch's policy) on a device of the recorded size,
// once with the run's own configuration and once with each usual remedy over it.
#include <absl/container/flat_hash_set.h>

#include <algorithm>

#include "analyses.hpp"
#include "memlens/analysis/trace_requests.hpp"
#include "memlens/allocator/request_replay.hpp"

namespace memlens::analysis {

namespace {

// What PyTorch's OOM message and its memory docs suggest, in the order they suggest it.
constexpr const char* kRemedies[] = {"expandable_segments:True", "max_split_size_mb:128", "roundup_power2_divisions:4"};

}  // namespace

void replay_ooms(const profiler::TraceReader& trace, Report& r) {
  const std::string& recorded = trace.header().allocator_config;
  for (const DeviceReport& d : r.devices) {
    std::vector<OomReport*> ooms;
    for (OomReport& o : r.fragmentation.ooms)
      if (o.device == d.index) ooms.push_back(&o);
    if (ooms.empty()) continue;
    // The device's size: as the trace gives it, else what an OOM saw (reserved plus free).
    std::uint64_t capacity = d.capacity;
    if (capacity == 0)
      for (const OomReport* o : ooms) capacity = std::max(capacity, o->reserved + o->device_free);
    if (capacity == 0) continue;
    std::vector<ReplayRequest> requests;
    try {
      requests = replay_requests(trace, d.name, nullptr);
    } catch (const std::exception&) {
      continue;  // a trace that does not replay gets no verdicts, not a failed report
    }
    std::vector<std::pair<std::string, std::string>> configs{{"as recorded", recorded}};
    for (const char* remedy : kRemedies)
      if (recorded.find(remedy) == std::string::npos) configs.emplace_back(remedy, recorded + "," + remedy);
    for (const auto& [name, text] : configs) {
      ReplayOptions o;
      try {
        o.config = AllocatorConfig::parse(text);
      } catch (const std::exception&) {
        continue;
      }
      o.capacity = capacity;
      ReplayResult result;
      try {
        result = replay(requests, o);
      } catch (const std::exception&) {
        continue;
      }
      // A replayed request names its event (from 1).
      absl::flat_hash_set<std::uint64_t> failed;
      for (const auto& f : result.ooms) failed.insert(f.line);
      for (OomReport* oom : ooms) {
        oom->replay_capacity = capacity;
        oom->replay.push_back({name, !failed.contains(oom->event_index + 1)});
      }
    }
  }
}

}  // namespace memlens::analysis
