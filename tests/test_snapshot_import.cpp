// The snapshot importer on hand-made documents: the site rule over Python and C++ frames,
// steps from frames and annotations, and the stack of a live block as the viewer shows it.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <memlens/analysis/memory_at.hpp>
#include <memlens/trace/trace_reader.hpp>
#include <memlens/snapshot/py_document.hpp>
#include <memlens/snapshot/snapshot_import.hpp>
#include <string>

using namespace memlens;
using namespace memlens::snapshot;

namespace {

std::string temp_trace() { return "/tmp/memlens-snapshot-import-" + std::to_string(::getpid()) + ".memtrace"; }

std::string frame(const std::string& file, int line, const std::string& name) {
  return R"({"filename": ")" + file + R"(", "line": )" + std::to_string(line) + R"(, "name": ")" + name + R"("})";
}

// One allocation per stack, 100 bytes apart, at time i.
std::string snapshot_of(const std::vector<std::string>& stacks, const std::string& more = "") {
  std::string entries;
  for (std::size_t i = 0; i < stacks.size(); ++i)
    entries += std::string(i ? "," : "") + R"({"action": "alloc", "addr": )" + std::to_string(4096 + 100 * i) +
               R"(, "size": 100, "stream": 0, "time_us": )" + std::to_string(i + 1) + R"(, "frames": [)" + stacks[i] + "]}";
  return R"({"segments": [], "device_traces": [[)" + entries + "]]" + more + "}";
}

// Each allocation's site location, in order.
std::vector<std::string> sites_of(const std::string& doc, const ImportOptions& o = {}) {
  const std::string path = temp_trace();
  import_snapshot(doc, SnapshotEncoding::Json, "test.json", path, o);
  profiler::TraceReader r(path);
  std::vector<std::string> out;
  r.for_each([&](const profiler::Event& e) {
    if (e.kind == profiler::EventKind::Alloc) {
      profiler::SiteInfo s = r.site(e.site());
      out.push_back(s.file + (s.line ? ":" + std::to_string(s.line) : ""));
    }
  });
  std::remove(path.c_str());
  return out;
}

}  // namespace

TEST_CASE("snapshot import: a site is the user's innermost Python line, else the autograd node", "[snapshot]") {
  const std::string torch = frame("/venv/lib/python3.12/site-packages/torch/nn/modules/module.py", 1750, "_call_impl");
  const std::string stdlib = frame("/usr/lib/python3.12/contextlib.py", 81, "inner");
  const std::string source_torch = frame("/home/me/pytorch/torch/functional.py", 400, "einsum");
  const std::string user = frame("/home/me/model.py", 30, "forward");
  const std::string outer = frame("/home/me/train.py", 7, "main");
  const std::string cpp = frame("??", 0, "at::native::add(at::Tensor const&)");
  const std::string node =
      frame("Functions.cpp", 0, "torch::autograd::generated::MulBackward0::apply(std::vector<at::Tensor>&&)");
  const std::string copy = frame("??", 0, "torch::autograd::CopySlices::apply(std::vector<at::Tensor>&&)");
  const std::string engine = frame("??", 0, "torch::autograd::Engine::thread_main(std::shared_ptr<GraphTask> const&)");
  auto sites = sites_of(snapshot_of({
      cpp + "," + torch + "," + user + "," + outer,           // framework frames skipped: the user's line
      cpp + "," + stdlib + "," + source_torch + "," + outer,  // the standard library and torch's sources too
      cpp + "," + node + "," + engine,                        // the backward pass: its node
      cpp + "," + copy + "," + engine,                        // a node that is not generated
      cpp + "," + engine,                                     // the engine's own
      cpp,                                                    // nothing to go by
  }));
  CHECK(sites == std::vector<std::string>{"/home/me/model.py:30", "/home/me/train.py:7", "autograd:MulBackward0",
                                          "autograd:CopySlices", "autograd:engine", ""});
}

TEST_CASE("snapshot import: --step-at ends a step where a run under the frame ends; --step-at-scope at each range's end",
          "[snapshot]") {
  const std::string fwd = frame("/home/me/train.py", 10, "forward");
  const std::string opt = frame("/home/me/optim.py", 20, "step");
  // forward, step, step, forward, step, forward: two runs under step() end, at entries 4 and 6.
  std::string doc = snapshot_of({fwd, opt, opt, fwd, opt, fwd},
                                R"(, "external_annotations": [
      {"stage": "START", "name": "ProfilerStep#1", "device": 0, "time_us": 0},
      {"stage": "END", "name": "ProfilerStep#1", "device": 0, "time_us": 3},
      {"stage": "START", "name": "ProfilerStep#2", "device": 0, "time_us": 3},
      {"stage": "END", "name": "ProfilerStep#2", "device": 0, "time_us": 6},
      {"stage": "START", "name": "other", "device": 0, "time_us": 6},
      {"stage": "END", "name": "other", "device": 0, "time_us": 7}])");
  auto steps = [&](const ImportOptions& o) {
    const std::string path = temp_trace();
    import_snapshot(doc, SnapshotEncoding::Json, "test.json", path, o);
    profiler::TraceReader r(path);
    std::vector<std::uint64_t> at;  // time of each step, in µs
    std::size_t scopes = 0;
    r.for_each([&](const profiler::Event& e) {
      if (e.kind == profiler::EventKind::Step) at.push_back(e.time_ns / 1000);
      if (e.kind == profiler::EventKind::ScopeBegin) ++scopes;
    });
    std::remove(path.c_str());
    CHECK(scopes == 3);  // annotations are scopes either way
    return at;
  };
  ImportOptions by_frame;
  by_frame.step_at = "optim.step";
  CHECK(steps(by_frame) == std::vector<std::uint64_t>{4, 6});  // times relative to the first, at 0
  by_frame.step_at = "st?p";
  CHECK(steps(by_frame) == std::vector<std::uint64_t>{4, 6});
  ImportOptions by_scope;
  by_scope.step_at_scope = "ProfilerStep*";
  CHECK(steps(by_scope) == std::vector<std::uint64_t>{3, 6});
  CHECK(steps({}).empty());
}

TEST_CASE("snapshot import: the viewer's block under the cursor carries its whole stack", "[snapshot]") {
  const std::string doc = snapshot_of({frame("??", 0, "at::native::empty(...)") + "," + frame("/home/me/train.py", 7, "main")});
  const std::string path = temp_trace();
  import_snapshot(doc, SnapshotEncoding::Json, "test.json", path);
  profiler::TraceReader r(path);
  analysis::MemoryAt m = analysis::memory_at(r, 1000000);
  REQUIRE(m.devices.size() == 1);
  REQUIRE(m.devices[0].loose.size() == 1);  // no segment in this document
  const analysis::BlockAt& b = m.devices[0].loose[0];
  CHECK(b.size == 100);
  const auto& frames = m.stacks.at(b.stack).frames;
  REQUIRE(frames.size() == 2);
  CHECK(frames[0] == analysis::FrameRef{"", "at::native::empty(...)", "native"});
  CHECK(frames[1] == analysis::FrameRef{"/home/me/train.py:7", "main", "python"});
  std::remove(path.c_str());
}

TEST_CASE("snapshot import: pinned host memory (host_segments, host_traces) is the device cuda_host", "[snapshot]") {
  const std::string doc = R"({"segments": [], "device_traces": [[
      {"action": "alloc", "addr": 4096, "size": 100, "stream": 0, "time_us": 1}]],
    "host_segments": [{"address": 65536, "total_size": 8192, "blocks": [
      {"address": 65536, "size": 4096, "requested_size": 4000, "state": "active_allocated"}]}],
    "host_traces": [{"action": "alloc", "addr": 69632, "size": 2048, "time_us": 2},
                    {"action": "free_completed", "addr": 69632, "size": 2048, "time_us": 3}]})";
  const std::string path = temp_trace();
  ImportSummary sum = import_snapshot(doc, SnapshotEncoding::Json, "test.json", path);
  CHECK(sum.entries == 3);
  profiler::TraceReader r(path);
  REQUIRE(r.header().devices.size() == 2);
  CHECK(r.header().devices[0].name == "cuda:0");
  CHECK(r.header().devices[1].name == "cuda_host");
  std::uint64_t host_allocs = 0, host_bytes = 0;
  r.for_each([&](const profiler::Event& e) {
    if (e.kind == profiler::EventKind::Alloc && e.device == 1) ++host_allocs, host_bytes += e.alloc.size;
  });
  CHECK(host_allocs == 2);           // the block there at the start, and one in the trace
  CHECK(host_bytes == 4000 + 2048);  // requested sizes
  std::remove(path.c_str());
}
