// Fuzz target: the whole `memlens report` path on one input: read, analyse, render text,
// Markdown and JSON, and gather the replay requests, as the commands do.
#include <memlens/analysis/analyze.hpp>
#include <memlens/analysis/render.hpp>
#include <memlens/analysis/replay_trace.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace memlens;
  fuzz::FuzzInput input(data, size);
  if (!input.ok()) return 0;
  try {
    profiler::TraceReader r(input.path());
    std::vector<analysis::Report> reports{analysis::analyze(r)};
    analysis::RenderOptions ro;
    std::size_t n = analysis::render_text(reports, ro).size() + analysis::render_markdown(reports, ro).size() +
                    analysis::render_json(reports, ro).size();
    std::string device;
    n += analysis::replay_requests(r, "", &device).size();
    if (n == 1) return 1;  // keeps the work from being optimised away
  } catch (const profiler::TraceError&) {
  } catch (const profiler::ReplayError&) {
  }
  return 0;
}
