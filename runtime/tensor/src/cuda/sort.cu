// sort(): along one dim by CUB's radix sort of order-preserving 64-bit keys (stable, so
// equal values keep their order; NaN gets the largest key, as the host sorts it), the
// lines of the dim sorted as segments of one call.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

#include "device_types.cuh"
#include "launch.hpp"

namespace memlens::cuda {

namespace {

// Keys that compare as the values do, -0 equal to 0 and every NaN above +inf.
template <class C>
__device__ std::uint64_t order_key(C v) {
  constexpr std::uint64_t kSign = std::uint64_t{1} << 63;
  if constexpr (std::is_floating_point_v<C>) {
    double d = static_cast<double>(v);
    if (d != d) return ~std::uint64_t{0};
    if (d == 0) d = 0;
    std::uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    return bits & kSign ? ~bits : bits | kSign;
  } else {
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(v)) ^ kSign;
  }
}

template <class S>
__global__ void keys_kernel(const S* src, Strided lines, std::int64_t len, std::int64_t step, std::uint64_t* keys,
                            std::int64_t* positions, std::int64_t n) {
  for (std::int64_t e = global_index(); e < n; e += grid_stride()) {
    const std::int64_t l = e / len, j = e % len;
    keys[e] = order_key(load(src + lines.offset_of(l) + j * step));
    positions[e] = j;
  }
}

__global__ void segment_offsets_kernel(std::int64_t* offsets, std::int64_t lines, std::int64_t len) {
  for (std::int64_t l = global_index(); l <= lines; l += grid_stride()) offsets[l] = l * len;
}

__global__ void write_indices_kernel(std::int64_t* indices, Strided lines, std::int64_t len, std::int64_t step,
                                     const std::int64_t* sorted, std::int64_t n) {
  for (std::int64_t e = global_index(); e < n; e += grid_stride()) {
    const std::int64_t l = e / len, j = e % len;
    indices[lines.offset_of(l) + j * step] = sorted[e];
  }
}

}  // namespace

void sort(const Strided& indices, const Strided& src, int dim, bool descending, Scratch& scratch, cudaStream_t s) {
  const std::int64_t n = src.numel(), len = src.sizes[dim];
  if (n == 0) return;
  const std::int64_t lines = n / len;
  auto* keys = static_cast<std::uint64_t*>(scratch.get(2 * sizeof(std::uint64_t) * n));
  auto* positions = static_cast<std::int64_t*>(scratch.get(2 * sizeof(std::int64_t) * n));
  std::uint64_t* sorted_keys = keys + n;
  std::int64_t* sorted = positions + n;
  dispatch_type(src.dtype, [&](auto tag) {
    using S = decltype(tag);
    keys_kernel<S><<<blocks_for(n), kThreads, 0, s>>>(reinterpret_cast<const S*>(src.data), without_dim(src, dim), len,
                                                      src.strides[dim], keys, positions, n);
  });
  check_launch("sort: keys");
  std::size_t bytes = 0;
  if (lines == 1) {
    auto call = [&](void* temp) {
      return descending
                 ? cub::DeviceRadixSort::SortPairsDescending(temp, bytes, keys, sorted_keys, positions, sorted, n, 0, 64, s)
                 : cub::DeviceRadixSort::SortPairs(temp, bytes, keys, sorted_keys, positions, sorted, n, 0, 64, s);
    };
    check(call(nullptr), "sort: cub::DeviceRadixSort");
    check(call(scratch.get(bytes)), "sort: cub::DeviceRadixSort");
  } else {
    auto* offsets = static_cast<std::int64_t*>(scratch.get(sizeof(std::int64_t) * (lines + 1)));
    segment_offsets_kernel<<<blocks_for(lines + 1), kThreads, 0, s>>>(offsets, lines, len);
    check_launch("sort: offsets");
    auto call = [&](void* temp) {
      return descending ? cub::DeviceSegmentedRadixSort::SortPairsDescending(temp, bytes, keys, sorted_keys, positions, sorted, n,
                                                                             lines, offsets, offsets + 1, 0, 64, s)
                        : cub::DeviceSegmentedRadixSort::SortPairs(temp, bytes, keys, sorted_keys, positions, sorted, n, lines,
                                                                   offsets, offsets + 1, 0, 64, s);
    };
    check(call(nullptr), "sort: cub::DeviceSegmentedRadixSort");
    check(call(scratch.get(bytes)), "sort: cub::DeviceSegmentedRadixSort");
  }
  write_indices_kernel<<<blocks_for(n), kThreads, 0, s>>>(reinterpret_cast<std::int64_t*>(indices.data),
                                                          without_dim(indices, dim), len, indices.strides[dim], sorted, n);
  check_launch("sort: indices");
}

}  // namespace memlens::cuda
