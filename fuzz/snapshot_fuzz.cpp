// Fuzz target: PyTorch snapshots, pickle or JSON, read and converted into a trace that is
// then read back, analysed and rendered as the commands do (text, JSON, HTML). Any bytes
// end in a SnapshotError or a report: never a crash, a hang, code run, or memory beyond a
// few values per byte.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <memlens/analysis/analyze.hpp>
#include <memlens/analysis/render.hpp>
#include <memlens/trace/trace_reader.hpp>
#include <memlens/snapshot/py_document.hpp>
#include <memlens/snapshot/snapshot_import.hpp>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace memlens::snapshot;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  SnapshotEncoding encoding = sniff_snapshot(bytes.substr(0, 64));
  if (encoding == SnapshotEncoding::NotSnapshot) encoding = SnapshotEncoding::Pickle;  // the reader says why not
  // The trace goes to a memory file, reopened by path as a real one would be.
  int fd = memfd_create("memlens-fuzz-trace", MFD_CLOEXEC);
  if (fd < 0) return 0;
  const std::string trace = "/proc/self/fd/" + std::to_string(fd);
  try {
    ImportOptions options;
    options.step_at = "*step*";
    options.step_at_scope = "*";
    import_snapshot(bytes, encoding, "fuzz", trace, options);
    memlens::profiler::TraceReader reader(trace);
    std::size_t n = 0;
    reader.for_each([&](const memlens::profiler::Event& e) { n += reader.stack(e.stack()).size() + (e.site() != 0); });
    const std::vector<memlens::analysis::Report> reports{memlens::analysis::analyze(reader)};
    const memlens::analysis::RenderOptions ro;
    n += memlens::analysis::render_text(reports, ro).size() + memlens::analysis::render_json(reports, ro).size() +
         memlens::analysis::render_html(reports, ro).size();
    volatile std::size_t keep = n;  // keeps the work from being optimised away
    (void)keep;
  } catch (const SnapshotError&) {
  }
  ::close(fd);
  return 0;
}
