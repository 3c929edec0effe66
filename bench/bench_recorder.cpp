// What recording costs: one event on the hot path, and a whole training loop recorded
// against the same loop plain.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <memlens/profiler/recorder.hpp>
#include <memlens/runtime.hpp>
#include <memlens/runtime/instrument.hpp>

using namespace memlens;

namespace {

std::string trace_path() { return "/tmp/memlens-bench-" + std::to_string(::getpid()) + ".memtrace"; }

// One event through the runtime's emit API into this thread's ring (the writer thread
// drains it concurrently), as every alloc/free/view/copy event of a program goes.
// Timed in bursts of 1024 (an eighth of a ring) with the writer drained between bursts: the
// figure is the recording thread's cost, not the writer's throughput.
void BM_Record_Event(benchmark::State& state) {
  profiler::start(trace_path());
  auto* sink = instrument::sink();
  std::uint64_t storage = 0;
  const Device sim(DeviceType::Sim);
  for (auto _ : state) {
    for (int i = 0; i < 1024; ++i) sink->on_category(++storage, sim, instrument::Category::Activation);
    state.PauseTiming();
    profiler::flush();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * 1024);
  profiler::stop();
  std::remove(trace_path().c_str());
}
BENCHMARK(BM_Record_Event);

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
