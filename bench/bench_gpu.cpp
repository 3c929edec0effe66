// Op speed on cuda:0, on the shapes issue 20 compares with PyTorch (bench/compare_torch_gpu.py
// runs these beside PyTorch's CUDA build in one run and prints the ratios). Every
// iteration waits for the GPU, so a time is the op's own plus one synchronisation, as the
// PyTorch side measures it. The allocator pair is a cached 1 MiB block against a raw
// cudaMalloc/cudaFree. Without a usable GPU each case stops with the reason.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <memlens/runtime.hpp>

using namespace memlens;

namespace {

const Device kGpu("cuda:0");

bool gpu_or_skip(benchmark::State& state) {
  const std::string why = cuda_unavailable_reason();
  if (!why.empty()) state.SkipWithError(("no GPU: " + why).c_str());
  return why.empty();
}

// Runs `op` once per iteration and waits for it.
template <class Op>
void timed(benchmark::State& state, Op op, double bytes_per_iteration = 0) {
  op();
  synchronize(kDefaultStream);
  for (auto _ : state) {
    benchmark::DoNotOptimize(op());
    synchronize(kDefaultStream);
  }
  if (bytes_per_iteration > 0)
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes_per_iteration * static_cast<double>(state.iterations())));
}

// [n, n] @ [n, n] in float32 (1) or bfloat16 (2).
void BM_Matmul(benchmark::State& state) {
  if (!gpu_or_skip(state)) return;
  const std::int64_t n = state.range(0);
  const ScalarType t = state.range(1) == 1 ? kFloat32 : kBFloat16;
  Tensor a = rand({n, n}, kGpu).to(t), b = rand({n, n}, kGpu).to(t);
  timed(state, [&] { return a.matmul(b); });
  state.counters["TFLOPS"] = benchmark::Counter(
      2.0 * static_cast<double>(n * n * n) * static_cast<double>(state.iterations()) / 1e12, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Matmul)->Args({4096, 1})->Args({4096, 2})->Unit(benchmark::kMicrosecond)->UseRealTime();

// [8192, 8192] + [8192]: a row broadcast along every row.
void BM_BroadcastAdd(benchmark::State& state) {
  if (!gpu_or_skip(state)) return;
  Tensor a = rand({8192, 8192}, kGpu), b = rand({8192}, kGpu);
  timed(
      state, [&] { return a + b; }, 2.0 * 8192 * 8192 * 4);
}
BENCHMARK(BM_BroadcastAdd)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_Add(benchmark::State& state) {
  if (!gpu_or_skip(state)) return;
  Tensor a = rand({8192, 8192}, kGpu), b = rand({8192, 8192}, kGpu);
  timed(
      state, [&] { return a + b; }, 3.0 * 8192 * 8192 * 4);
}
BENCHMARK(BM_Add)->Unit(benchmark::kMicrosecond)->UseRealTime();

// sum of [8192, 8192] over dim 0 (down the columns) and dim 1 (along each row).
void BM_SumDim(benchmark::State& state) {
  if (!gpu_or_skip(state)) return;
  Tensor a = rand({8192, 8192}, kGpu);
  const std::int64_t d = state.range(0);
  timed(
      state, [&] { return a.sum({d}); }, 8192.0 * 8192 * 4);
}
BENCHMARK(BM_SumDim)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_Contiguous(benchmark::State& state) {
  if (!gpu_or_skip(state)) return;
  Tensor a = rand({8192, 8192}, kGpu).t();
  timed(
      state, [&] { return a.contiguous(); }, 2.0 * 8192 * 8192 * 4);
}
BENCHMARK(BM_Contiguous)->Unit(benchmark::kMicrosecond)->UseRealTime();

// One training step of a 784-256-10 MLP on a batch of 256 (forward, cross-entropy,
// backward, SGD with momentum): small kernels, so it measures the per-op cost.
void BM_MlpStep(benchmark::State& state) {
  if (!gpu_or_skip(state)) return;
  manual_seed(0);
  nn::Sequential model{std::make_shared<nn::Linear>(784, 256), std::make_shared<nn::ReLU>(),
                       std::make_shared<nn::Linear>(256, 10)};
  model.to(kGpu);
  optim::SGD opt(model.parameters(), optim::SGDOptions{0.01, 0.9});
  nn::CrossEntropyLoss criterion;
  Tensor x = randn({256, 784}, kGpu), y = randint(0, 10, {256}, TensorOptions(kInt64).device(kGpu));
  timed(state, [&] {
    opt.zero_grad();
    Tensor loss = criterion(model(x), y);
    loss.backward();
    opt.step();
    return loss;
  });
}
BENCHMARK(BM_MlpStep)->Unit(benchmark::kMicrosecond)->UseRealTime();

// A 1 MiB block from the caching allocator and back, against the driver's own pair.
void BM_AllocFreePair(benchmark::State& state) {
  if (!gpu_or_skip(state)) return;
  Allocator& alloc = allocator_for(kGpu);
  for (auto _ : state) {
    void* p = alloc.allocate(1 << 20);
    benchmark::DoNotOptimize(p);
    alloc.deallocate(p);
  }
}
BENCHMARK(BM_AllocFreePair);

void BM_CudaMallocFreePair(benchmark::State& state) {
  if (!gpu_or_skip(state)) return;
  for (auto _ : state) {
    void* p = nullptr;
    if (cudaMalloc(&p, 1 << 20) != cudaSuccess) {
      state.SkipWithError("cudaMalloc failed");
      break;
    }
    benchmark::DoNotOptimize(p);
    cudaFree(p);
  }
}
BENCHMARK(BM_CudaMallocFreePair);

}  // namespace

BENCHMARK_MAIN();
