// random() and randperm(): cuRAND's Philox generator in device code. Element i draws from
// the stream (seed, subsequence i, offset), so the values depend on the seed and on how
// many draws came before, never on the launch shape: a run is reproducible.
#include <curand_kernel.h>

#include <cub/device/device_radix_sort.cuh>

#include "device_types.cuh"
#include "launch.hpp"

namespace memlens::cuda {

namespace {

template <class S>
__global__ void random_kernel(S* out, std::int64_t n, Distribution d, double a, double b, std::uint64_t seed,
                              std::uint64_t offset) {
  for (std::int64_t i = global_index(); i < n; i += grid_stride()) {
    curandStatePhilox4_32_10_t state;
    curand_init(seed, static_cast<unsigned long long>(i), offset, &state);
    if (d == Distribution::Integers) {  // [a, b) in int64, exactly
      const uint4 r = curand4(&state);
      const auto bits = (static_cast<std::uint64_t>(r.x) << 32) | r.y;
      const auto range = static_cast<std::uint64_t>(static_cast<std::int64_t>(b) - static_cast<std::int64_t>(a));
      out[i] = to_storage<S>(static_cast<std::int64_t>(a) + static_cast<std::int64_t>(bits % range));
      continue;
    }
    double v;
    if (d == Distribution::Normal) {
      v = a + b * curand_normal2_double(&state).x;
    } else {
      const double u = 1.0 - curand_uniform2_double(&state).x;  // curand's (0, 1] turned to [0, 1)
      v = d == Distribution::Bernoulli ? (u < a ? 1.0 : 0.0) : a + (b - a) * u;
    }
    out[i] = to_storage<S>(v);
  }
}

__global__ void permutation_keys_kernel(std::uint64_t* keys, std::int64_t* positions, std::int64_t n, std::uint64_t seed,
                                        std::uint64_t offset) {
  for (std::int64_t i = global_index(); i < n; i += grid_stride()) {
    curandStatePhilox4_32_10_t state;
    curand_init(seed, static_cast<unsigned long long>(i), offset, &state);
    const uint4 r = curand4(&state);
    keys[i] = (static_cast<std::uint64_t>(r.x) << 32) | r.y;
    positions[i] = i;
  }
}

}  // namespace

void random(const Strided& out, Distribution d, double a, double b, std::uint64_t seed, std::uint64_t offset, cudaStream_t s) {
  const std::int64_t n = out.numel();
  if (n == 0) return;
  dispatch_type(out.dtype, [&](auto tag) {
    using S = decltype(tag);
    random_kernel<S><<<blocks_for(n), kThreads, 0, s>>>(reinterpret_cast<S*>(out.data), n, d, a, b, seed, offset);
  });
  check_launch("random");
}

// The positions sorted by random keys: a uniform permutation (ties among 64-bit keys are
// vanishingly rare, and resolved by position).
void randperm(const Strided& out, std::uint64_t seed, std::uint64_t offset, Scratch& scratch, cudaStream_t s) {
  const std::int64_t n = out.numel();
  if (n == 0) return;
  auto* keys = static_cast<std::uint64_t*>(scratch.get(2 * sizeof(std::uint64_t) * n));
  auto* positions = static_cast<std::int64_t*>(scratch.get(2 * sizeof(std::int64_t) * n));
  permutation_keys_kernel<<<blocks_for(n), kThreads, 0, s>>>(keys, positions, n, seed, offset);
  check_launch("randperm: keys");
  std::size_t bytes = 0;
  auto call = [&](void* temp) {
    return cub::DeviceRadixSort::SortPairs(temp, bytes, keys, keys + n, positions, positions + n, n, 0, 64, s);
  };
  check(call(nullptr), "randperm: cub::DeviceRadixSort");
  check(call(scratch.get(bytes)), "randperm: cub::DeviceRadixSort");
  Strided sorted;
  sorted.data = reinterpret_cast<char*>(positions + n);
  sorted.dtype = kInt64;
  sorted.ndim = 1;
  sorted.sizes[0] = n;
  sorted.strides[0] = 1;
  convert(out, sorted, s);
}

}  // namespace memlens::cuda
