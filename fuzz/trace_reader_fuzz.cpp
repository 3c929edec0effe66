// Fuzz target: the trace reader alone. Opening, every pass, random access by chunk and
// the tables must end in a TraceError or a result: never a crash, a hang or memory
// beyond what the input holds.
#include <memlens/trace/trace_reader.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace memlens;
  return fuzz::with_trace(data, size, [](const profiler::TraceReader& r) {
    std::uint64_t sum = 0;
    r.for_each([&](const profiler::Event& e) { sum += e.time_ns + e.site() + e.stack() + e.name(); });
    for (std::size_t i = 0; i < r.chunks().size(); ++i)
      for (const auto& e : r.read_chunk(i)) {
        sum += r.string(e.name()).size() + r.site_location(e.site()).size();
        sum += r.stack(e.stack()).size();
      }
    sum += r.totals().events + r.problem().size();
    volatile std::uint64_t keep = sum;  // keeps the work from being optimised away
    (void)keep;
  });
}
