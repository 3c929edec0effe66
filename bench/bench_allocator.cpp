// The caching allocator's speed: a cached alloc+free pair, and a training-like mix.
#include <benchmark/benchmark.h>

#include <memlens/allocator/caching_allocator.hpp>
#include <random>
#include <utility>

using namespace memlens;

namespace {

std::unique_ptr<CachingAllocator> make(const std::string& conf = "") {
  return std::make_unique<CachingAllocator>(std::make_unique<SimSource>(std::size_t{8} << 30), AllocatorConfig::parse(conf));
}

// alloc+free of a size the cache already holds: the hot path of every training step.
void BM_CachingAllocator_HotPair(benchmark::State& state) {
  auto alloc = make();
  auto size = static_cast<std::size_t>(state.range(0));
  alloc->deallocate(alloc->allocate(size));  // warm the cache
  for (auto _ : state) {
    void* p = alloc->allocate(size);
    // By const reference: Google Benchmark 1.7's DoNotOptimize(T&) is an asm with a "+m,r"
    // read-write operand, which GCC 12 with -fsanitize=address miscompiles: p came back
    // as garbage (0x130000f7), deallocate ignored it, and every pair leaked its block
    // until the 8 GiB device was full (the OutOfMemoryError of the sanitizer build).
    benchmark::DoNotOptimize(std::as_const(p));
    alloc->deallocate(p);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CachingAllocator_HotPair)->Arg(512)->Arg(64 << 10)->Arg(4 << 20)->Arg(64 << 20);

// A replayed training-like mix: per step, activations allocated layer by layer in the
// forward pass and freed in reverse in the backward pass, with gradient buffers and
// short-lived temporaries in between.
struct MixRequest {
  bool alloc;
  int slot;
  std::size_t bytes;
};

std::vector<MixRequest> training_mix(int steps) {
  std::mt19937 rng(1);
  const std::size_t sizes[] = {4 << 10, 256 << 10, 1 << 20, 3 << 20, 12 << 20, 48 << 20};
  std::vector<MixRequest> out;
  const int layers = 12;
  for (int s = 0; s < steps; ++s) {
    for (int l = 0; l < layers; ++l) {
      std::size_t act = sizes[(l + s) % 6] + (rng() % 64) * 512;
      out.push_back({true, l, act});
      out.push_back({true, 100, sizes[rng() % 3]});  // a temporary
      out.push_back({false, 100, 0});
    }
    for (int l = layers - 1; l >= 0; --l) {
      out.push_back({true, 200 + l, sizes[l % 4]});  // the gradient of layer l's output
      out.push_back({false, l, 0});
      out.push_back({false, 200 + l, 0});
    }
  }
  return out;
}

void BM_CachingAllocator_Mixed(benchmark::State& state) {
  auto requests = training_mix(50);
  double ratio_at_peak = 0;
  std::int64_t pairs = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto alloc = make(state.range(0) ? "expandable_segments:True" : "");
    std::vector<void*> slot(300, nullptr);
    std::int64_t peak_reserved = 0;
    state.ResumeTiming();
    for (const auto& r : requests) {
      if (r.alloc) {
        slot[static_cast<std::size_t>(r.slot)] = alloc->allocate(r.bytes);
        ++pairs;
      } else {
        alloc->deallocate(slot[static_cast<std::size_t>(r.slot)]);
      }
    }
    state.PauseTiming();
    AllocatorStats s = alloc->stats();
    peak_reserved = s.reserved_bytes.all.peak;
    ratio_at_peak = static_cast<double>(peak_reserved) / static_cast<double>(s.allocated_bytes.all.peak);
    alloc.reset();
    state.ResumeTiming();
  }
  state.counters["pairs_per_s"] = benchmark::Counter(static_cast<double>(pairs), benchmark::Counter::kIsRate);
  state.counters["reserved_over_allocated_at_peak"] = ratio_at_peak;
}
BENCHMARK(BM_CachingAllocator_Mixed)->Arg(0)->Arg(1)->ArgName("expandable");

}  // namespace

BENCHMARK_MAIN();
