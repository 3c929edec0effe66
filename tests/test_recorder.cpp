// The recorder: what the runtime does becomes events, at the user's call sites.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <memlens/trace/export.hpp>
#include <memlens/recorder/recorder.hpp>
#include <memlens/trace/trace_reader.hpp>
#ifdef MEMLENS_TEST_ANALYSIS
#include <memlens/analysis/analyze.hpp>
#endif
#include <memlens/runtime.hpp>
#include <memlens/tensor/instrument.hpp>
#include <nlohmann/json.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <sstream>
#include <fstream>
#include <set>
#include <thread>

using namespace memlens;
using namespace memlens::profiler;

namespace {

std::string temp_trace(const std::string& name) {
  return "/tmp/memlens-rec-" + std::to_string(::getpid()) + "-" + name + ".memtrace";
}

std::vector<Event> all_events(const TraceReader& r) {
  std::vector<Event> v;
  r.for_each([&](const Event& e) { v.push_back(e); });
  return v;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

TEST_CASE("recording turns allocations - views - copies and ops into events") {
  std::string path = temp_trace("basic");
  Device sim("sim");
  start(path);
  CHECK(recording());
  std::uint64_t storage_id = 0;
  {
    Tensor x = ones({256, 4});  // cpu
    Tensor s = x.to(sim);       // a host-to-device copy
    storage_id = s.storage()->id();
    Tensor t = s.t();           // a view
    Tensor c = t.contiguous();  // a layout copy
    Scope scope("forward");
    Tensor y = s + s;  // an op
    step();
  }
  stop();
  CHECK_FALSE(recording());
  TraceReader r(path);
  CHECK(r.problem().empty());
  REQUIRE(r.has_footer());
  CHECK(*r.footer_totals() == r.totals());
  auto events = all_events(r);
  auto count = [&](EventKind k) { return r.totals().by_kind[static_cast<std::size_t>(k)]; };
  CHECK(count(EventKind::Alloc) >= 4);
  CHECK(count(EventKind::Step) == 1);
  CHECK(count(EventKind::ScopeBegin) == 1);
  CHECK(count(EventKind::ScopeEnd) == 1);
  bool saw_device_alloc = false, saw_to_device = false, saw_contiguous = false, saw_transpose = false, saw_add = false;
  for (const auto& e : events) {
    if (e.kind == EventKind::Alloc && e.alloc.storage == storage_id) {
      saw_device_alloc = true;
      CHECK(e.device == 1);
      CHECK(e.alloc.requested == 4096);
      CHECK(e.alloc.size == 4096);
      CHECK(e.alloc.segment != 0);
      CHECK(e.alloc.segment <= e.alloc.address);
    }
    if (e.kind == EventKind::Copy && e.copy.reason == CopyReason::ToDevice) {
      saw_to_device = true;
      CHECK(e.copy.src_device == 0);
      CHECK(e.device == 1);
      CHECK(e.copy.bytes == 4096);
    }
    if (e.kind == EventKind::Copy && e.copy.reason == CopyReason::Contiguous) saw_contiguous = true;
    if (e.kind == EventKind::View && e.view.view == ViewKind::Transpose) {
      saw_transpose = true;
      CHECK(e.view.storage == storage_id);
      CHECK(e.view.sizes.ndim == 2);
      CHECK(e.view.sizes.dims[0] == 4);
      CHECK(e.view.strides.dims[0] == 1);
    }
    if (e.kind == EventKind::Op && r.string(e.op.name) == "add") {
      saw_add = true;
      CHECK(e.op.n_inputs == 2);
      CHECK(e.op.output.sizes.dims[0] == 256);
      CHECK(e.op.output.strides.ndim == e.op.output.sizes.ndim);
      CHECK(e.op.output.strides.dims[e.op.output.sizes.ndim - 1] == 1);
      CHECK(e.op.output.dtype == ScalarType::Float32);
      CHECK(e.op.output.device == e.device);
      CHECK(e.op.bytes == 4096);
      CHECK_FALSE(e.op.broadcast);
    }
  }
  CHECK(saw_device_alloc);
  CHECK(saw_to_device);
  CHECK(saw_contiguous);
  CHECK(saw_transpose);
  CHECK(saw_add);
  CHECK(r.header().devices.size() == 3);
  CHECK(r.header().devices[1].name == "sim:0");
  CHECK(r.header().devices[2].name == "cuda_host");
  CHECK_FALSE(r.modules().empty());
  std::remove(path.c_str());
}

TEST_CASE("pinned memory is its own device in the trace - cuda_host - with its cached blocks") {
  std::string path = temp_trace("pinned");
  host_empty_cache();
  start(path);
  std::uint64_t pinned_storage = 0;
  {
    Tensor batch = ones({250, 4});       // 4000 bytes on cpu
    Tensor pinned = batch.pin_memory();  // a 4096-byte pinned block (a power of two)
    pinned_storage = pinned.storage()->id();
    Tensor on_device = pinned.to(Device("sim"), true);
  }
  Tensor again = ones({250, 4}).pin_memory();  // reuses the cached block: no new segment
  host_empty_cache();                          // the block is live: nothing to return yet
  stop();
  TraceReader r(path);
  const std::uint8_t host = 2;
  REQUIRE(r.header().devices[host].name == "cuda_host");
  int segments = 0, allocs = 0, frees = 0, pinned_copies = 0, to_device = 0;
  for (const Event& e : all_events(r)) {
    if (e.device != host && !(e.kind == EventKind::Copy)) continue;
    if (e.kind == EventKind::SegmentAlloc) {
      ++segments;
      CHECK(e.segment.size == 4096);
    }
    if (e.kind == EventKind::Alloc) {
      ++allocs;
      CHECK(e.alloc.size == 4096);
      CHECK(e.alloc.requested == 4000);
    }
    if (e.kind == EventKind::FreeCompleted) ++frees;
    if (e.kind == EventKind::Copy && e.device == host && e.copy.src_device == 0) ++pinned_copies;  // cpu -> pinned
    if (e.kind == EventKind::Copy && e.copy.src_device == host && e.device == 1) ++to_device;      // pinned -> sim
  }
  CHECK(segments == 1);
  CHECK(allocs == 2);
  CHECK(frees == 1);
  CHECK(pinned_copies == 2);
  CHECK(to_device == 1);
  CHECK(pinned_storage != 0);
  std::remove(path.c_str());
}

TEST_CASE("events name the user's call site - for a named call and for an operator") {
  std::string path = temp_trace("sites");
  Tensor x = rand({8, 8});
  start(path);
  const int reshape_line = __LINE__ + 1;
  Tensor v = x.t().reshape({64});
  const int op_line = __LINE__ + 1;
  Tensor w = x * x;
  stop();
  TraceReader r(path);
  std::string reshape_site, op_site;
  r.for_each([&](const Event& e) {
    if (e.kind == EventKind::Copy && e.copy.reason == CopyReason::Reshape) reshape_site = r.site_location(e.site());
    if (e.kind == EventKind::Op && r.string(e.op.name) == "mul") op_site = r.site_location(e.site());
  });
  CHECK(ends_with(reshape_site, "tests/test_recorder.cpp:" + std::to_string(reshape_line)));
  CHECK(ends_with(op_site, "tests/test_recorder.cpp:" + std::to_string(op_line)));
  std::remove(path.c_str());
}

TEST_CASE("eight threads recording at once lose nothing", "[concurrency]") {
  std::string path = temp_trace("threads");
  start(path);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([] {
      for (int i = 0; i < 500; ++i) Tensor a = empty({64}, Device("sim"));
    });
  for (auto& th : threads) th.join();
  stop();
  TraceReader r(path);
  std::uint64_t allocs = 0, frees = 0;
  r.for_each([&](const Event& e) {
    allocs += e.kind == EventKind::Alloc && e.device == 1 && e.alloc.size == 512;
    frees += e.kind == EventKind::FreeRequested && e.device == 1 && e.free.size == 512;
  });
  CHECK(allocs >= 8 * 500);
  CHECK(frees >= 8 * 500);
  CHECK(*r.footer_totals() == r.totals());
  std::remove(path.c_str());
}

TEST_CASE("one order for all threads: a producer allocates, a consumer frees, the trace's bytes are the allocator's",
          "[concurrency]") {
  // The trace replayed in its file order (as every analysis replays it) must give the
  // allocator's own figures: its peak, its final bytes and its bytes at each step, on
  // every run, however the two threads interleaved.
  const Device sim("sim");
  constexpr int kRuns = 20, kSteps = 4, kPerStep = 300;
  std::string path = temp_trace("producer-consumer");
  for (int run = 0; run < kRuns; ++run) {
    start(path);
    reset_peak_memory_stats(sim);
    std::vector<std::int64_t> at_steps;
    std::vector<Tensor> kept;  // every 50th, so the end holds something
    for (int s = 0; s < kSteps; ++s) {
      std::mutex mu;
      std::condition_variable ready;
      std::deque<Tensor> queue;
      std::thread producer([&] {
        for (int i = 0; i < kPerStep; ++i) {
          Tensor t = empty({64 + (i * 37) % 2048}, sim);
          std::lock_guard l(mu);
          queue.push_back(std::move(t));
          ready.notify_one();
        }
      });
      std::thread consumer([&] {
        for (int i = 0; i < kPerStep; ++i) {
          Tensor t;
          {
            std::unique_lock l(mu);
            ready.wait(l, [&] { return !queue.empty(); });
            t = std::move(queue.front());
            queue.pop_front();
          }
          if (i % 50 == 0) kept.push_back(std::move(t));
        }  // freed here, on this thread
      });
      producer.join();
      consumer.join();
      at_steps.push_back(memory_allocated(sim));
      step();
    }
    const std::int64_t peak = max_memory_allocated(sim), final_bytes = memory_allocated(sim);
    stop();
    TraceReader r(path);
    REQUIRE(r.problem().empty());
    std::uint8_t device = 0;
    while (device < r.header().devices.size() && r.header().devices[device].name != "sim:0") ++device;
    REQUIRE(device < r.header().devices.size());
    std::int64_t live = 0, trace_peak = 0;
    std::vector<std::int64_t> trace_steps;
    r.for_each([&](const Event& e) {
      if (e.kind == EventKind::Step) trace_steps.push_back(live);
      if (e.device != device) return;
      if (e.kind == EventKind::Alloc) trace_peak = std::max(trace_peak, live += static_cast<std::int64_t>(e.alloc.size));
      if (e.kind == EventKind::FreeRequested) live -= static_cast<std::int64_t>(e.free.size);
    });
    INFO("run " << run);
    CHECK(trace_peak == peak);
    CHECK(live == final_bytes);
    CHECK(trace_steps == at_steps);
#ifdef MEMLENS_TEST_ANALYSIS
    // The report's figures, from the same order.
    const analysis::Report report = analysis::analyze(r);
    for (const auto& d : report.devices)
      if (d.index == device) {
        CHECK(d.peak_allocated.allocated == static_cast<std::uint64_t>(peak));
        CHECK(d.final_allocated == static_cast<std::uint64_t>(final_bytes));
      }
#endif
  }
  std::remove(path.c_str());
}

TEST_CASE("start and stop race steps - scopes and tensors on other threads safely", "[concurrency]") {
  std::string path = temp_trace("start-stop-race");
  std::atomic<bool> done{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < 3; ++t)
    workers.emplace_back([&] {
      const Device sim("sim");
      while (!done.load()) {
        step();
        Scope s("work");
        Tensor a = ones({64}, sim) * 2;
      }
    });
  for (int i = 0; i < 20; ++i) {
    start(path);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    stop();
    TraceReader r(path);
    CHECK(r.problem().empty());
    CHECK(*r.footer_totals() == r.totals());
  }
  done = true;
  for (auto& w : workers) w.join();
  std::remove(path.c_str());
}

TEST_CASE("a recording process killed with SIGKILL leaves every flushed chunk readable") {
  std::string path = temp_trace("killed");
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    RecordOptions o;
    o.flush_interval_ms = 20;
    start(path, o);
    for (int i = 0;; ++i) {
      Tensor a = empty({64}, Device("sim"));
      if (i % 100 == 0) {
        step();
        usleep(1000);
      }
    }
  }
  usleep(400 * 1000);
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(WIFSIGNALED(status));
  TraceReader r(path);
  CHECK_FALSE(r.has_footer());
  CHECK(r.problem().rfind("the trace ends without a footer", 0) == 0);
  CHECK(r.totals().by_kind[static_cast<std::size_t>(EventKind::Step)] > 10);
  CHECK(r.totals().by_kind[static_cast<std::size_t>(EventKind::Alloc)] > 1000);
  std::remove(path.c_str());
}

TEST_CASE("starting twice is refused") {
  std::string path = temp_trace("twice");
  start(path);
  CHECK_THROWS_AS(start(path + "2"), TraceError);
  stop();
  stop();  // idempotent
  CHECK_THROWS_WITH(start("/nonexistent/dir/t.memtrace"),
                    "/nonexistent/dir/t.memtrace: cannot create trace file: No such file or directory");
  std::remove(path.c_str());
}

TEST_CASE("exports: Chrome trace JSON and the JSON event stream") {
  std::string path = temp_trace("export");
  start(path);
  {
    Scope s("forward");
    Tensor a = ones({1000}, Device("sim"));
    Tensor b = a * 2;
    step();
  }
  stop();
  TraceReader r(path);
  std::ostringstream chrome, lines;
  export_chrome_trace(r, chrome);
  export_json_events(r, lines);
  auto doc = nlohmann::json::parse(chrome.str());
  int counters = 0, scopes = 0, steps = 0, ops = 0;
  std::int64_t last_allocated = -1;
  for (auto& e : doc["traceEvents"]) {
    std::string ph = e["ph"];
    if (ph == "C" && e["name"] == "allocated (sim:0)") {
      ++counters;
      last_allocated = e["args"]["bytes"];
    }
    scopes += ph == "B" || ph == "E";
    steps += ph == "i";
    ops += ph == "X";
  }
  CHECK(counters >= 4);
  CHECK(last_allocated == 0);  // everything was freed
  CHECK(scopes == 2);
  CHECK(steps == 1);
  CHECK(ops == 2);  // ones (a constant: an op of no inputs) and the mul
  std::istringstream in(lines.str());
  std::size_t n = 0;
  bool saw_mul = false;
  for (std::string line; std::getline(in, line); ++n) {
    auto j = nlohmann::json::parse(line);
    if (j["kind"] == "op" && j["name"] == "mul") {
      saw_mul = true;
      CHECK(j["output"]["sizes"] == nlohmann::json::array({1000}));
      CHECK(j["output"]["strides"] == nlohmann::json::array({1}));
      CHECK(j["output"]["dtype"] == "torch.float32");
      CHECK(j["output"]["device"] == "sim:0");
      CHECK(j["bytes"] == 4000);
      CHECK(j["device"] == "sim:0");
    }
  }
  CHECK(n == r.totals().events);
  CHECK(saw_mul);
  std::remove(path.c_str());
}

TEST_CASE("MEMLENS_TRACE records the linear regression sample - broadcast at its loss line") {
  std::string path = temp_trace("sample");
  std::string cmd = "MEMLENS_TRACE=" + path + " " + LINEAR_REGRESSION_BIN + " >/dev/null 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  TraceReader r(path);
  CHECK(r.problem().empty());
  // The line of the loss in the sample's source.
  std::ifstream src(LINEAR_REGRESSION_SRC);
  int loss_line = 0, n = 0;
  for (std::string line; std::getline(src, line);)
    if (++n && line.find("loss = (y_pred - y)") != std::string::npos) loss_line = n;
  REQUIRE(loss_line > 0);
  int at_loss_line = 0, elsewhere = 0;
  r.for_each([&](const Event& e) {
    if (e.kind == EventKind::Op && r.string(e.op.name) == "sub" && e.op.broadcast) {
      CHECK(e.op.output.sizes.dims[0] == 100);
      CHECK(e.op.output.sizes.dims[1] == 100);
      CHECK(e.op.output.strides.dims[0] == 100);
      CHECK(e.op.output.strides.dims[1] == 1);
      CHECK(e.op.bytes == 40000);
      if (ends_with(r.site_location(e.site()), "samples/linear_regression.cpp:" + std::to_string(loss_line))) ++at_loss_line;
      else ++elsewhere;
    }
  });
  CHECK(at_loss_line == 100);  // once per epoch
  CHECK(elsewhere == 1);       // the sample prints the shape once more
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  double bytes_per_event = static_cast<double>(f.tellg()) / static_cast<double>(r.totals().events);
  WARN("linear_regression trace: " << r.totals().events << " events, " << bytes_per_event << " bytes per event");
  CHECK(bytes_per_event < 8.0);
  std::remove(path.c_str());
}

TEST_CASE("native stacks are recorded on allocations when asked") {
  std::string path = temp_trace("stacks");
  RecordOptions o;
  o.stacks = true;
  o.stack_depth = 16;
  start(path, o);
  Tensor t = empty({128}, Device("sim"));
  stop();
  TraceReader r(path);
  bool found = false;
  r.for_each([&](const Event& e) {
    if (e.kind != EventKind::Alloc || e.alloc.storage != t.storage()->id()) return;
    auto frames = r.stack(e.alloc.stack);
    REQUIRE_FALSE(frames.empty());
    CHECK(frames.size() <= 16);
    for (auto& f : frames) found = found || ends_with(f.file, "tests/test_recorder.cpp");
  });
  CHECK(found);
  std::remove(path.c_str());
}

TEST_CASE("every record kind comes back field by field - across many ring wraps") {
  std::string path = temp_trace("fields");
  start(path);
  auto* sink = instrument::sink();
  REQUIRE(sink);
  const Device sim("sim");
  // 8 dims is the most a record keeps; a 10-dim shape keeps its first 8.
  instrument::Dims sizes{2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, strides{11, 10, 9, 8, 7, 6, 5, 4, 3, 2};
  // Inputs on two devices, of two dtypes; a column-major output.
  instrument::Dims a{4, 1}, a_strides{1, 1}, b{1, 5}, b_strides{5, 1}, out{4, 5}, out_strides{1, 4};
  const instrument::OpTensor ta{&a, &a_strides, ScalarType::Float64, kCPU, 11, 3},
      tb{&b, &b_strides, ScalarType::Int64, sim, 12, 0};
  const instrument::OpTensor inputs[] = {ta, tb, ta, tb, ta}, output{&out, &out_strides, ScalarType::Float32, sim, 13, 0};
  const int n = 60000;  // about ten rings of words
  for (int i = 0; i < n; ++i) {
    sink->on_view(1000 + static_cast<std::uint64_t>(i), 7, sim, ViewKind::Permute, ScalarType::Float64, sizes, strides, i);
    sink->on_copy(kCPU, reinterpret_cast<const void*>(0x1000), sim, reinterpret_cast<const void*>(0x2000),
                  static_cast<std::uint64_t>(i), CopyReason::Clone);
    sink->on_op("test_op", inputs, 5, output, 80, sink->now_ns(), true);
    sink->on_category(static_cast<std::uint64_t>(i), sim, Category::Gradient);
  }
  stop();
  TraceReader r(path);
  REQUIRE(r.problem().empty());
  int views = 0, copies = 0, ops = 0, categories = 0;
  bool fields_ok = true;
  std::uint64_t last_time = 0;
  bool monotonic = true;
  r.for_each([&](const Event& e) {
    if (e.thread != 0) return;
    monotonic = monotonic && e.time_ns >= last_time;
    last_time = e.time_ns;
    if (e.kind == EventKind::View && e.view.storage == 7) {
      const ViewEvent& v = e.view;
      fields_ok = fields_ok && v.tensor == 1000 + static_cast<std::uint64_t>(views) && v.offset == views &&
                  v.view == ViewKind::Permute && v.dtype == ScalarType::Float64 && e.device == 1 && v.sizes.ndim == 8 &&
                  v.sizes.dims[7] == 9 && v.strides.ndim == 8 && v.strides.dims[0] == 11 && v.strides.dims[7] == 4;
      ++views;
    } else if (e.kind == EventKind::Copy && e.copy.reason == CopyReason::Clone) {
      fields_ok = fields_ok && e.copy.bytes == static_cast<std::uint64_t>(copies) && e.copy.dst_address == 0x2000 &&
                  e.copy.src_address == 0x1000 && e.device == 1 && e.copy.src_device == 0;
      ++copies;
    } else if (e.kind == EventKind::Op && r.string(e.op.name) == "test_op") {
      const OpEvent& o = e.op;
      fields_ok = fields_ok && o.n_inputs == 4 && o.inputs[1].sizes.ndim == 2 && o.inputs[1].sizes.dims[1] == 5 &&
                  o.inputs[1].strides.dims[0] == 5 && o.inputs[1].dtype == ScalarType::Int64 && o.inputs[1].device == 1 &&
                  o.inputs[2].sizes.dims[0] == 4 && o.inputs[2].dtype == ScalarType::Float64 && o.inputs[2].device == 0 &&
                  o.inputs[1].storage == 12 && o.inputs[2].storage == 11 && o.inputs[2].offset == 3 && o.output.storage == 13 &&
                  o.output.sizes.ndim == 2 && o.output.sizes.dims[1] == 5 && o.output.strides.ndim == 2 &&
                  o.output.strides.dims[0] == 1 && o.output.strides.dims[1] == 4 && o.output.device == 1 && e.device == 1 &&
                  o.bytes == 80 && o.broadcast;
      ++ops;
    } else if (e.kind == EventKind::Category && e.category.category == Category::Gradient) {
      fields_ok = fields_ok && e.category.storage == static_cast<std::uint64_t>(categories);
      ++categories;
    }
  });
  CHECK(views == n);
  CHECK(copies == n);
  CHECK(ops == n);
  CHECK(categories == n);
  CHECK(fields_ok);
  CHECK(monotonic);
  std::remove(path.c_str());
}

TEST_CASE("events of one runtime call share its timestamp - ops refresh it") {
  std::string path = temp_trace("stamps");
  Tensor x = rand({64, 64}).to(Device("sim"));
  start(path);
  Tensor y = x.mm(x).relu();
  stop();
  TraceReader r(path);
  std::vector<Event> ops, before_mm_end, after_mm_end;  // sim allocations, by their place in the thread's order
  r.for_each([&](const Event& e) {
    if (e.kind == EventKind::Op) ops.push_back(e);
    // (storage 0: the snapshot of memory allocated before recording began)
    if (e.kind == EventKind::Alloc && e.device == 1 && e.alloc.storage != 0)
      (ops.empty() ? before_mm_end : after_mm_end).push_back(e);
  });
  REQUIRE(ops.size() == 2);
  CHECK(r.string(ops[0].op.name) == "mm");
  CHECK(r.string(ops[1].op.name) == "relu");
  CHECK(ops[0].op.duration_ns > 0);  // a 64x64x64 product takes a measurable time
  // mm's allocations are stamped with its call's start, relu's after mm ended.
  std::uint64_t mm_start = ops[0].time_ns - ops[0].op.duration_ns;
  REQUIRE_FALSE(before_mm_end.empty());
  REQUIRE_FALSE(after_mm_end.empty());
  for (const auto& e : before_mm_end) {
    CHECK(e.time_ns + 1 >= mm_start);  // the same reading, up to rounding to ns
    CHECK(e.time_ns <= mm_start + 1);
  }
  for (const auto& e : after_mm_end) CHECK(e.time_ns >= ops[0].time_ns);
  CHECK(ops[1].time_ns - ops[1].op.duration_ns >= ops[0].time_ns);
  std::remove(path.c_str());
}

TEST_CASE("the rings of threads that ended are freed once their events are in the trace", "[concurrency]") {
  std::string path = temp_trace("retire");
  start(path);
  Tensor warm = empty({8}, Device("sim"));  // this thread's ring exists
  flush();
  std::size_t before = recorder_stats().thread_rings;
  for (int t = 0; t < 32; ++t) {
    std::thread th([] {
      for (int i = 0; i < 100; ++i) Tensor a = empty({256}, Device("sim"));
    });
    th.join();
  }
  flush();
  CHECK(recorder_stats().thread_rings == before);
  stop();
  TraceReader r(path);
  std::set<std::uint32_t> threads;
  std::uint64_t allocs = 0;
  r.for_each([&](const Event& e) {
    if (e.kind != EventKind::Alloc || e.alloc.requested != 1024) return;
    ++allocs;
    threads.insert(e.thread);
  });
  CHECK(allocs == 32 * 100);
  CHECK(threads.size() == 32);  // every thread its own number, none reused
  std::remove(path.c_str());
}

TEST_CASE("random tensors are recorded as ops, at the caller's line like their allocation") {
  std::string path = temp_trace("random-op");
  start(path);
  for (int i = 0; i < 3; ++i) {
    Tensor target = randn({256}, Device("sim"));  // a fresh target every step: data, not a buffer
    step();
  }
  stop();
  TraceReader r(path);
  int randn_ops = 0;
  std::uint32_t op_site = 0, alloc_site = 0;
  r.for_each([&](const Event& e) {
    if (e.kind == EventKind::Op && r.string(e.op.name) == "randn") {
      ++randn_ops;
      CHECK(e.op.n_inputs == 0);
      CHECK(e.op.output.sizes.ndim == 1);
      CHECK(e.op.output.sizes.dims[0] == 256);
      CHECK(e.op.bytes == 1024);
      op_site = e.op.site;
    }
    if (e.kind == EventKind::Alloc && e.alloc.requested == 1024 && e.device == 1) alloc_site = e.alloc.site;
  });
  CHECK(randn_ops == 3);
  REQUIRE(op_site != 0);
  CHECK(r.site_location(op_site) == r.site_location(alloc_site));
  std::remove(path.c_str());
}

TEST_CASE("an embedding lookup is one op: no view or op event per row, forward or backward") {
  std::string path = temp_trace("embedding");
  nn::Embedding table(100, 16);
  Tensor ids = randint(0, 100, {256});
  start(path);
  table(ids).sum().backward();
  stop();
  TraceReader r(path);
  auto count = [&](EventKind k) { return r.totals().by_kind[static_cast<std::size_t>(k)]; };
  // 256 rows picked and their gradients added back: a handful of events, not hundreds.
  CHECK(count(EventKind::View) < 10);
  CHECK(count(EventKind::Op) < 20);
  std::remove(path.c_str());
}
