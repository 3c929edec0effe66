// Op speed on the cpu device, one thread, on the shapes issue 17 compares with PyTorch
// (bench/compare_torch.py runs these beside PyTorch's CPU build and prints the ratios).
// The MLP step reports its allocations per step (the cpu allocator's count).
#include <benchmark/benchmark.h>

#include <memlens/runtime.hpp>

using namespace memlens;

namespace {

void BM_Matmul(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  Tensor a = rand({n, n}), b = rand({n, n});
  for (auto _ : state) benchmark::DoNotOptimize(a.matmul(b));
}
BENCHMARK(BM_Matmul)->Arg(512);

// [1000, 1000] + [1000]: the row broadcast along every row.
void BM_BroadcastAdd(benchmark::State& state) {
  Tensor a = rand({1000, 1000}), b = rand({1000});
  for (auto _ : state) benchmark::DoNotOptimize(a + b);
}
BENCHMARK(BM_BroadcastAdd);

void BM_Add(benchmark::State& state) {
  Tensor a = rand({1000, 1000}), b = rand({1000, 1000});
  for (auto _ : state) benchmark::DoNotOptimize(a + b);
}
BENCHMARK(BM_Add);

// sum over dim 0 (down the columns) and dim 1 (along each row) of [1000, 1000].
void BM_SumDim(benchmark::State& state) {
  Tensor a = rand({1000, 1000});
  const std::int64_t d = state.range(0);
  for (auto _ : state) benchmark::DoNotOptimize(a.sum({d}));
}
BENCHMARK(BM_SumDim)->Arg(0)->Arg(1);

void BM_Contiguous(benchmark::State& state) {
  Tensor a = rand({1000, 1000}).t();
  for (auto _ : state) benchmark::DoNotOptimize(a.contiguous());
}
BENCHMARK(BM_Contiguous);

// bfloat16 (issue 39): the matmul (float32 accumulation), and layer_norm and softmax,
// computed in float32 inside and rounded once, as PyTorch's kernels.
void BM_MatmulBf16(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  Tensor a = rand({n, n}).to(kBFloat16), b = rand({n, n}).to(kBFloat16);
  for (auto _ : state) benchmark::DoNotOptimize(a.matmul(b));
}
BENCHMARK(BM_MatmulBf16)->Arg(512);

void BM_LayerNormBf16(benchmark::State& state) {
  Tensor x = randn({1024, 768}).to(kBFloat16), w = ones({768}, kBFloat16), b = zeros({768}, kBFloat16);
  for (auto _ : state) benchmark::DoNotOptimize(nn::functional::layer_norm(x, {768}, w, b));
}
BENCHMARK(BM_LayerNormBf16);

void BM_SoftmaxBf16(benchmark::State& state) {
  Tensor x = randn({1024, 1024}).to(kBFloat16);
  for (auto _ : state) benchmark::DoNotOptimize(softmax(x, 1));
}
BENCHMARK(BM_SoftmaxBf16);

// One training step of a 784-256-10 MLP on a batch of 256: forward, cross-entropy,
// backward, SGD with momentum.
void BM_MlpStep(benchmark::State& state) {
  manual_seed(0);
  nn::Sequential model{std::make_shared<nn::Linear>(784, 256), std::make_shared<nn::ReLU>(),
                       std::make_shared<nn::Linear>(256, 10)};
  optim::SGD opt(model.parameters(), optim::SGDOptions{0.01, 0.9});
  nn::CrossEntropyLoss criterion;
  Tensor x = randn({256, 784}), y = randint(0, 10, {256});
  auto step = [&] {
    opt.zero_grad();
    Tensor loss = criterion(model(x), y);
    loss.backward();
    opt.step();
  };
  step();  // momentum buffers exist from here on
  auto allocations = [] { return memory_stats(kCPU)["allocation.all.allocated"]; };
  std::int64_t before = allocations();
  for (auto _ : state) step();
  state.counters["allocations_per_step"] = static_cast<double>(allocations() - before) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_MlpStep)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
