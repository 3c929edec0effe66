#include "memlens/analysis/trace_requests.hpp"

#include <absl/container/flat_hash_map.h>

namespace memlens::analysis {

using profiler::EventKind;

std::vector<ReplayRequest> replay_requests(const profiler::TraceReader& trace, const std::string& device, std::string* chosen) {
  const auto& devices = trace.header().devices;
  int want = -1;
  for (std::size_t i = 0; i < devices.size(); ++i)
    if (devices[i].name == device) want = static_cast<int>(i);
  if (!device.empty() && want < 0) throw ReplayError("the trace has no device '" + device + "'");
  std::vector<ReplayRequest> out;
  absl::flat_hash_map<std::uint64_t, std::uint64_t> live;  // address -> request id
  std::uint64_t next = 1, index = 0;
  trace.for_each([&](const profiler::Event& e) {
    ++index;
    if (e.kind != EventKind::Alloc && e.kind != EventKind::FreeRequested && e.kind != EventKind::Oom) return;
    if (want < 0 && e.kind == EventKind::Alloc && e.device < devices.size() && devices[e.device].name != "cpu") want = e.device;
    if (e.device != want) return;
    if (e.kind == EventKind::Oom) {
      // The request that failed, tried again at that moment (and let go: the program never had it).
      const profiler::FailureEvent& f = e.failure;
      out.push_back({ReplayRequest::Op::Alloc, next, f.requested ? f.requested : f.size, f.stream, index});
      out.push_back({ReplayRequest::Op::Free, next++, 0, f.stream, index});
    } else if (e.kind == EventKind::Alloc) {
      const profiler::AllocEvent& a = e.alloc;
      live[a.address] = next;
      out.push_back({ReplayRequest::Op::Alloc, next++, a.requested ? a.requested : a.size, a.stream, index});
    } else if (auto it = live.find(e.free.address); it != live.end()) {
      out.push_back({ReplayRequest::Op::Free, it->second, 0, e.free.stream, index});
      live.erase(it);
    }
  });
  if (chosen) *chosen = want >= 0 ? devices[static_cast<std::size_t>(want)].name : "";
  return out;
}

}  // namespace memlens::analysis
