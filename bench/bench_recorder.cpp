// What recording costs: one event on the hot path, and a whole training loop recorded
// against the same loop plain.
#include <benchmark/benchmark.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include <memlens/recorder/recorder.hpp>
#include <memlens/runtime.hpp>
#include <memlens/allocator/caching_allocator.hpp>
#include <memlens/tensor/instrument.hpp>
#include <memlens/allocator/memory_source.hpp>

using namespace memlens;

namespace {

std::string trace_path() { return "/tmp/memlens-bench-" + std::to_string(::getpid()) + ".memtrace"; }

// ns per recorded alloc event: the marginal cost recording adds to the allocator's hot
// path. Each iteration times 1024 allocations on the recorded sim allocator and 1024 on an
// identical private allocator no recorder observes, each owned by a storage id as
// StorageImpl does; the difference per allocation is the event's cost (the frees, two more
// events each, are untimed). Median over iterations, in the counter median_ns_per_event.
//   clock:shared  the allocation happens inside a runtime call whose timestamp is already
//                 read (an op's output): the event reuses it (instrument::current_event_group)
//   clock:own     a lone allocation outside any call: the event reads the clock itself
void record_alloc_events(benchmark::State& state, int stack_depth, bool shared_clock) {
  constexpr std::size_t kBurst = 1024;
  Allocator& recorded = allocator_for(Device(DeviceType::Sim));
  CachingAllocator plain(std::make_unique<SimSource>(sim_capacity_from_env()), AllocatorConfig::from_env());
  profiler::RecordOptions o;
  o.stacks = stack_depth > 0;
  o.stack_depth = stack_depth > 0 ? stack_depth : 32;
  profiler::start(trace_path(), o);
  std::vector<void*> blocks(kBurst);
  auto burst_ns = [&](Allocator& a) {
    auto t0 = std::chrono::steady_clock::now();
    {
      std::optional<instrument::ApiEntry> call;
      if (shared_clock) call.emplace(__builtin_return_address(0));
      for (std::size_t i = 0; i < kBurst; ++i) {
        instrument::EventGroup moment;
        blocks[i] = a.allocate(512, kDefaultStream, i + 1);
      }
    }
    auto t1 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < kBurst; ++i) {
      instrument::EventGroup moment;
      a.deallocate(blocks[i]);
    }
    return std::chrono::duration<double, std::nano>(t1 - t0).count();
  };
  std::vector<double> per_event;
  for (auto _ : state) {
    double plain_ns = burst_ns(plain);
    double recorded_ns = burst_ns(recorded);
    double d = std::max(0.0, recorded_ns - plain_ns) / kBurst;
    per_event.push_back(d);
    state.SetIterationTime(d * kBurst * 1e-9);
    profiler::flush();  // the writer's work stays out of the next burst
  }
  std::sort(per_event.begin(), per_event.end());
  state.counters["median_ns_per_event"] = per_event.empty() ? 0.0 : per_event[per_event.size() / 2];
  state.counters["ring_waits"] = static_cast<double>(profiler::recorder_stats().ring_waits);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kBurst));
  profiler::stop();
  std::remove(trace_path().c_str());
}

void BM_Record_Event(benchmark::State& state) { record_alloc_events(state, 0, state.range(0) != 0); }
// A fixed count of bursts: the time each iteration reports is the recorded burst's excess
// over the plain one, which can be 0 ns, and a benchmark run until its reported time adds
// up to the minimum would then never end.
constexpr int kBursts = 2000;
BENCHMARK(BM_Record_Event)->ArgName("clock_shared")->Arg(1)->Arg(0)->UseManualTime()->Iterations(kBursts);

// The same with the whole process on one CPU: the writer thread runs only while the
// benchmark waits in flush(), never beside a timed burst. What is left is the hot path's
// own cost; the difference from BM_Record_Event is what the writer's work on the other
// CPU costs the recording thread (on a 2-vCPU VM whose vCPUs share a core, a lot).
void BM_Record_Event_OneCpu(benchmark::State& state) {
  cpu_set_t all, one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  if (sched_getaffinity(0, sizeof all, &all) != 0 || sched_setaffinity(0, sizeof one, &one) != 0) {
    state.SkipWithError("cannot pin the process to one CPU");
    return;
  }
  record_alloc_events(state, 0, state.range(0) != 0);
  sched_setaffinity(0, sizeof all, &all);
}
BENCHMARK(BM_Record_Event_OneCpu)->ArgName("clock_shared")->Arg(1)->Arg(0)->UseManualTime()->Iterations(kBursts);

void BM_Record_EventWithStack(benchmark::State& state) { record_alloc_events(state, static_cast<int>(state.range(0)), true); }
BENCHMARK(BM_Record_EventWithStack)->Arg(16)->UseManualTime()->Iterations(kBursts);

void BM_Probe_Category(benchmark::State& state) {
  profiler::start(trace_path());
  auto* sink = instrument::sink();
  std::uint64_t storage = 0;
  const Device sim(DeviceType::Sim);
  instrument::ApiEntry call(nullptr);
  for (auto _ : state) {
    for (int i = 0; i < 1024; ++i) sink->on_category(++storage, sim, instrument::Category::Activation);
    state.PauseTiming();
    if (state.range(0)) profiler::flush();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * 1024);
  profiler::stop();
  std::remove(trace_path().c_str());
}
BENCHMARK(BM_Probe_Category)->Arg(0)->Arg(1);

// Events without pauses: the rate the writer thread sustains (encoding, zstd, write).
void BM_Record_Sustained(benchmark::State& state) {
  profiler::start(trace_path());
  auto* sink = instrument::sink();
  std::uint64_t storage = 0;
  const Device sim(DeviceType::Sim);
  for (auto _ : state) sink->on_category(++storage, sim, instrument::Category::Activation);
  state.SetItemsProcessed(state.iterations());
  profiler::stop();
  std::remove(trace_path().c_str());
}
BENCHMARK(BM_Record_Sustained);

// A tensor allocated and freed on sim (three events: alloc, free_requested,
// free_completed), plain, recorded, and recorded with a native stack of Arg frames on
// the alloc event.
void BM_Record_TensorAllocFree(benchmark::State& state) {
  int depth = static_cast<int>(state.range(0));
  if (depth >= 0) {
    profiler::RecordOptions o;
    o.stacks = depth > 0;
    o.stack_depth = depth > 0 ? depth : 32;
    profiler::start(trace_path(), o);
  }
  const Device sim(DeviceType::Sim);
  for (auto _ : state) {
    for (int i = 0; i < 256; ++i) benchmark::DoNotOptimize(empty({64}, sim));
    if (depth >= 0) {
      state.PauseTiming();
      profiler::flush();
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations() * 256);
  if (depth >= 0) {
    profiler::stop();
    std::remove(trace_path().c_str());
  }
}
BENCHMARK(BM_Record_TensorAllocFree)->ArgName("stack_depth")->Arg(-1)->Arg(0)->Arg(16);

// The seed's linear regression loop (fixed version) on sim, plain or recorded.
void linear_regression(int epochs) {
  manual_seed(0);
  Tensor X = (rand({100, 1}) * 10).to(Device("sim"));
  Tensor y = (2 * X + 1).add(randn({100, 1}).to(Device("sim")));
  Tensor w = zeros({1, 1}, TensorOptions(Device("sim")).requires_grad(true));
  Tensor b = zeros({1}, TensorOptions(Device("sim")).requires_grad(true));
  for (int epoch = 0; epoch < epochs; ++epoch) {
    Tensor loss = (X.matmul(w) + b - y).pow(2).mean();
    loss.backward();
    NoGradGuard g;
    w -= 0.01 * w.grad();
    b -= 0.01 * b.grad();
    w.grad().zero_();
    b.grad().zero_();
  }
}

void BM_LinearRegression(benchmark::State& state) {
  bool recorded = state.range(0) != 0;
  if (recorded) profiler::start(trace_path());
  for (auto _ : state) linear_regression(100);
  if (recorded) {
    profiler::stop();
    std::remove(trace_path().c_str());
  }
}
BENCHMARK(BM_LinearRegression)->ArgName("recorded")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// A two-layer MLP step at a realistic size (batch 256, 784 -> 256 -> 10, Adam) on sim.
void BM_MLP(benchmark::State& state) {
  bool recorded = state.range(0) != 0;
  manual_seed(0);
  const Device sim(DeviceType::Sim);
  auto net = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(784, 256), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(256, 10)});
  net->to(sim);
  optim::Adam adam(net->parameters());
  nn::CrossEntropyLoss ce;
  Tensor x = randn({256, 784}).to(sim);
  Tensor y = randint(0, 10, {256}).to(sim);
  if (recorded) profiler::start(trace_path());
  for (auto _ : state) {
    adam.zero_grad();
    Tensor loss = ce((*net)(x), y);
    loss.backward();
    adam.step();
    profiler::step();
  }
  if (recorded) {
    profiler::stop();
    std::remove(trace_path().c_str());
  }
}
BENCHMARK(BM_MLP)->ArgName("recorded")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
