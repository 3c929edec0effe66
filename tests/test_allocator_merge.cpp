// A recording of a PyTorch program merged with its CUDA caching allocator's own trace
// (memlens/snapshot/allocator_trace_merge.hpp), on a hand-made pair whose every figure is
// worked out below, and on a real snapshot from ../shared whose blocks a recorder is made
// to have seen, against the ground truth of tests/snapshot_truth.py (Python's pickle,
// nothing of memlens).
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memlens/analysis/analyze.hpp>
#include <memlens/snapshot/allocator_trace_merge.hpp>
#include <memlens/trace/trace_reader.hpp>
#include <memlens/trace/trace_writer.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

using namespace memlens;
using namespace memlens::snapshot;
using profiler::Event;
using profiler::EventKind;

namespace {

std::string temp(const std::string& name) { return "/tmp/memlens-merge-" + std::to_string(::getpid()) + "-" + name; }

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// What memlens' Python recorder writes through its C ABI (record_abi.cpp): each storage
// its own segment and block, on the devices "cpu,cuda:0".
class RecorderTrace {
 public:
  explicit RecorderTrace(const std::string& path) : writer_(path, header()) {}

  void storage(std::uint64_t t_ns, std::uint64_t address, std::uint64_t bytes, std::uint64_t id, Category c,
               const std::string& file, std::uint32_t line, std::uint8_t device = 1) {
    write(t_ns, device, EventKind::SegmentAlloc, profiler::SegmentEvent{.address = address, .size = bytes});
    write(t_ns, device, EventKind::Alloc,
          profiler::AllocEvent{.address = address,
                               .segment = address,
                               .size = bytes,
                               .requested = bytes,
                               .storage = id,
                               .category = c,
                               .site = writer_.intern_site(file, line, "f", profiler::Language::Python)});
  }
  void free(std::uint64_t t_ns, std::uint64_t address, std::uint64_t bytes, std::uint64_t id, std::uint8_t device = 1) {
    const profiler::FreeEvent f{.address = address, .size = bytes, .storage = id};
    write(t_ns, device, EventKind::FreeRequested, f);
    write(t_ns, device, EventKind::FreeCompleted, f);
    write(t_ns, device, EventKind::SegmentFree, profiler::SegmentEvent{.address = address, .size = bytes});
  }
  void op(std::uint64_t start_ns, std::uint64_t end_ns, const std::string& file, std::uint32_t line) {
    profiler::OpEvent o{};
    o.name = writer_.intern_string("mm");
    o.site = writer_.intern_site(file, line, "f", profiler::Language::Python);
    o.duration_ns = end_ns - start_ns;
    write(start_ns, 1, EventKind::Op, o);
  }
  void category(std::uint64_t t_ns, std::uint64_t id, Category c) {
    write(t_ns, 1, EventKind::Category, profiler::CategoryEvent{.storage = id, .category = c});
  }
  void oom(std::uint64_t t_ns, std::uint64_t requested, const std::string& file, std::uint32_t line) {
    write(
        t_ns, 1, EventKind::Oom,
        profiler::FailureEvent{
            .size = requested, .requested = requested, .site = writer_.intern_site(file, line, "f", profiler::Language::Python)});
  }
  void close() { writer_.close(); }

 private:
  static profiler::TraceHeader header() {
    profiler::TraceHeader h;
    h.program = "train.py";
    h.devices = {{"cpu", 0}, {"cuda:0", 0}};
    return h;
  }
  template <class Fields>
  void write(std::uint64_t t_ns, std::uint8_t device, EventKind kind, const Fields& f) {
    Event e(kind, f);
    e.time_ns = t_ns;
    e.device = device;
    writer_.write(e);
  }
  profiler::TraceWriter writer_;
};

std::string site_of(const profiler::TraceReader& r, std::uint32_t id) {
  const profiler::SiteInfo s = r.site(id);
  return s.file + ":" + std::to_string(s.line);
}

const analysis::DeviceReport& device_named(const analysis::Report& report, const std::string& name) {
  for (const analysis::DeviceReport& d : report.devices)
    if (d.name == name) return d;
  FAIL("no device " << name);
  return report.devices.front();
}

std::string run_command(const std::string& command) {
  std::string out;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  INFO(out);
  REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  return out;
}

}  // namespace

TEST_CASE("allocator merge: the allocator's segments and blocks, each seen block with its storage's role and line",
          "[snapshot][merge]") {
  // Times: the snapshot's in unix µs, the recording's in ns, merged with offset 0.
  constexpr std::uint64_t kSegment = 0x100000, kA = kSegment, kWork = kSegment + 0x200, kB = kSegment + 0x600;
  constexpr std::uint64_t kOutside = 0x900000;  // memory the caching allocator never saw
  const std::string snapshot = R"({"segments": [], "device_traces": [[
    {"action": "segment_alloc", "addr": 1048576, "size": 2097152, "stream": 0, "time_us": 10},
    {"action": "alloc", "addr": 1048576, "size": 512, "stream": 0, "time_us": 11},
    {"action": "alloc", "addr": 1049088, "size": 1024, "stream": 0, "time_us": 20},
    {"action": "alloc", "addr": 1050112, "size": 2048, "stream": 0, "time_us": 22},
    {"action": "free_requested", "addr": 1049088, "size": 1024, "stream": 0, "time_us": 24},
    {"action": "free_completed", "addr": 1049088, "size": 1024, "stream": 0, "time_us": 24},
    {"action": "free_requested", "addr": 1050112, "size": 2048, "stream": 0, "time_us": 40},
    {"action": "free_completed", "addr": 1050112, "size": 2048, "stream": 0, "time_us": 40},
    {"action": "oom", "addr": 0, "size": 8589934592, "stream": 0, "time_us": 50, "device_free": 1000}]]})";
  const std::string recorded = temp("recorded.memtrace"), merged = temp("merged.memtrace");
  {
    RecorderTrace t(recorded);
    t.storage(5'000, 0x5000, 100, 1, Category::Input, "train.py", 2, /*device=*/0);  // on the CPU: untouched
    t.storage(12'000, kA, 500, 2, Category::Parameter, "train.py", 5);               // 500 B asked, a 512 B block
    t.op(19'000, 25'000, "train.py", 9);  // the matmul: its workspace (1024 B) is never a tensor
    t.storage(25'000, kB, 2048, 3, Category::Unknown, "train.py", 9);
    t.category(27'000, 3, Category::Activation);
    t.storage(30'000, kOutside, 4096, 4, Category::Input, "train.py", 11);
    t.free(35'000, kOutside, 4096, 4);
    t.free(41'000, kB, 2048, 3);  // seen a little after the allocator freed it
    t.oom(50'500, 8'000'000'000, "train.py", 12);
    t.close();
  }
  const profiler::TraceReader in(recorded);
  const AllocatorMergeSummary sum = merge_allocator_trace(in, snapshot, SnapshotEncoding::Json, 0, merged);
  CHECK(sum.storages == 3);  // on cuda:0
  CHECK(sum.matched == 2);
  CHECK(sum.unseen_blocks == 1);
  CHECK(sum.segments == 1);
  CHECK(sum.ooms == 1);

  const profiler::TraceReader out(merged);
  REQUIRE(out.header().devices.size() == 2);
  std::map<std::uint64_t, Event> allocs;  // by address
  std::vector<EventKind> cuda_kinds;
  std::uint64_t last_time = 0;
  bool in_order = true;
  Event oom;
  out.for_each([&](const Event& e) {
    in_order = in_order && (e.kind == EventKind::Op || e.time_ns >= last_time);
    if (e.kind != EventKind::Op) last_time = std::max(last_time, e.time_ns);
    if (e.kind == EventKind::Alloc) allocs[e.alloc.address] = e;
    if (e.kind == EventKind::Oom) oom = e;
    if (e.device == 1 && e.kind != EventKind::Op && e.kind != EventKind::Category) cuda_kinds.push_back(e.kind);
  });
  CHECK(in_order);
  REQUIRE(allocs.size() == 5);
  const Event& a = allocs.at(kA);
  CHECK(a.alloc.size == 512);
  CHECK(a.alloc.requested == 500);
  CHECK(a.alloc.storage == 2);
  CHECK(a.alloc.segment == kSegment);
  CHECK(a.alloc.category == Category::Parameter);
  CHECK(site_of(out, a.alloc.site) == "train.py:5");
  CHECK(a.time_ns == 11'000);  // when the allocator made it
  const Event& work = allocs.at(kWork);
  CHECK(work.alloc.storage == 0);
  CHECK(work.alloc.category == Category::Temporary);
  CHECK(site_of(out, work.alloc.site) == "train.py:9");  // the op running then
  CHECK(allocs.at(kB).alloc.storage == 3);
  const Event& outside = allocs.at(kOutside);
  CHECK(outside.alloc.storage == 4);
  CHECK(outside.alloc.segment == kOutside);
  CHECK(allocs.at(0x5000).device == 0);
  CHECK(oom.failure.requested == 8'000'000'000);
  CHECK(oom.failure.device_free == 1000);
  CHECK(oom.failure.reserved == 2097152);
  CHECK(oom.failure.allocated == 512);
  CHECK(site_of(out, oom.failure.site) == "train.py:12");
  using K = EventKind;
  CHECK(cuda_kinds == std::vector<K>{K::SegmentAlloc, K::Alloc, K::Alloc, K::Alloc, K::FreeRequested, K::FreeCompleted,
                                     K::SegmentAlloc, K::Alloc, K::FreeRequested, K::FreeCompleted, K::SegmentFree,
                                     K::FreeRequested, K::FreeCompleted, K::Oom});

  // What the analyses make of it: the allocator's figures, the recorder's roles.
  const analysis::Report report = analysis::analyze(out);
  const analysis::DeviceReport& cuda = device_named(report, "cuda:0");
  CHECK(cuda.allocs == 4);
  CHECK(cuda.ooms == 1);
  CHECK(cuda.peak_allocated.allocated == 512 + 2048 + 4096);  // A, B and the outside storage, at 30 µs
  CHECK(cuda.peak_reserved.reserved == 2097152 + 4096);
  CHECK(cuda.final_allocated == 512);
  CHECK(cuda.final_reserved == 2097152);
  std::remove(recorded.c_str());
  std::remove(merged.c_str());
}

TEST_CASE("allocator merge: a real snapshot's blocks, half of them seen as storages, keep the snapshot's figures",
          "[snapshot][merge]") {
  const std::string file = std::string(TORCH_SNAPSHOTS_DIR) + "/silmont_mem_snapshot.pickle";
  if (!std::filesystem::exists(file)) {
    WARN("skipped: " << file << " is absent (the snapshots live in the project's shared folder)");
    return;
  }
  if (std::system("python3 -c 'import pickle, json' 2>/dev/null") != 0) {
    WARN("skipped: python3 is not installed");
    return;
  }
  const nlohmann::json truth = nlohmann::json::parse(run_command("python3 '" SNAPSHOT_TRUTH_PY "' '" + file + "'"));
  const nlohmann::json blocks = nlohmann::json::parse(run_command("python3 '" SNAPSHOT_TRUTH_PY "' --blocks '" + file + "'"));
  REQUIRE(blocks.size() > 20);

  // A recorder saw every other block as a storage (at its birth, freed at its end); the
  // rest were made inside an op it saw.
  const std::string recorded = temp("real-recorded.memtrace"), merged = temp("real-merged.memtrace");
  std::size_t seen = 0, unseen = 0;
  {
    RecorderTrace t(recorded);
    struct Timed {
      std::uint64_t t;
      int what;  // 0 op, 1 storage, 2 free
      std::size_t i;
    };
    std::vector<Timed> events;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const std::uint64_t born = blocks[i]["born_us"].get<std::uint64_t>() * 1000;
      if (i % 2 == 0) {
        events.push_back({born, 1, i});
        if (!blocks[i]["freed_us"].is_null()) events.push_back({blocks[i]["freed_us"].get<std::uint64_t>() * 1000, 2, i});
        ++seen;
      } else {
        events.push_back({born, 0, i});
        ++unseen;
      }
    }
    std::stable_sort(events.begin(), events.end(), [](const Timed& a, const Timed& b) { return a.t < b.t; });
    for (const Timed& e : events) {
      const nlohmann::json& b = blocks[e.i];
      const auto addr = b["addr"].get<std::uint64_t>(), size = b["size"].get<std::uint64_t>();
      if (e.what == 0) t.op(e.t, e.t, "ops.py", static_cast<std::uint32_t>(e.i));
      if (e.what == 1) t.storage(e.t, addr, size, e.i + 1, Category::Activation, "train.py", static_cast<std::uint32_t>(e.i));
      if (e.what == 2) t.free(e.t, addr, size, e.i + 1);
    }
    t.close();
  }
  const profiler::TraceReader in(recorded);
  const AllocatorMergeSummary sum = merge_allocator_trace(in, slurp(file), SnapshotEncoding::Pickle, 0, merged);
  CHECK(sum.storages == seen);
  CHECK(sum.matched == seen);

  const profiler::TraceReader out(merged);
  std::size_t with_storage = 0, temporaries = 0;
  out.for_each([&](const Event& e) {
    if (e.kind != EventKind::Alloc || e.device != 1) return;
    if (e.alloc.storage) {
      ++with_storage;
      const nlohmann::json& b = blocks[e.alloc.storage - 1];
      CHECK(e.alloc.address == b["addr"].get<std::uint64_t>());
      CHECK(e.alloc.category == Category::Activation);
      CHECK(site_of(out, e.alloc.site) == "train.py:" + std::to_string(e.alloc.storage - 1));
    } else if (e.alloc.category == Category::Temporary) {
      ++temporaries;
      CHECK(out.site(e.alloc.site).file == "ops.py");
    }
  });
  CHECK(with_storage == seen);
  CHECK(temporaries == unseen);

  const analysis::Report report = analysis::analyze(out);
  const nlohmann::json& t = truth.at("cuda:0");
  const analysis::DeviceReport& cuda = device_named(report, "cuda:0");
  CHECK(cuda.allocs == t["allocs"].get<std::uint64_t>());
  CHECK(cuda.peak_allocated.allocated == t["peak_allocated"].get<std::uint64_t>());
  CHECK(cuda.peak_reserved.reserved == t["peak_reserved"].get<std::uint64_t>());
  CHECK(cuda.final_allocated == t["final_allocated"].get<std::uint64_t>());
  CHECK(cuda.final_reserved == t["final_reserved"].get<std::uint64_t>());
  std::remove(recorded.c_str());
  std::remove(merged.c_str());
}
