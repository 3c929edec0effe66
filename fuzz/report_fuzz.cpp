// Fuzz target: the whole `memlens report` path on one input: read, analyse, render text,
// Markdown and JSON, and gather the replay requests, as the commands do.
#include <memlens/analysis/analyze.hpp>
#include <memlens/analysis/render.hpp>
#include <memlens/analysis/trace_requests.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace memlens;
  return fuzz::with_trace(data, size, [](const profiler::TraceReader& r) {
    std::vector<analysis::Report> reports{analysis::analyze(r)};
    analysis::RenderOptions ro;
    std::size_t n = analysis::render_text(reports, ro).size() + analysis::render_markdown(reports, ro).size() +
                    analysis::render_json(reports, ro).size();
    try {
      std::string device;
      n += analysis::replay_requests(r, "", &device).size();
    } catch (const ReplayError&) {  // a trace without an accelerator
    }
    volatile std::size_t keep = n;  // keeps the work from being optimised away
    (void)keep;
  });
}
