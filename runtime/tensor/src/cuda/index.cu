// The indexing kernels: bounds checks, take/put of slices at listed offsets (index_select,
// index_add, masked_select, advanced indexing), gather/scatter along a dim, and the
// positions of non-zero elements (CUB's DeviceSelect).
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <climits>

#include "device_types.cuh"
#include "launch.hpp"

namespace memlens::cuda {

namespace {

__global__ void first_outside_kernel(const std::int64_t* index, Strided geometry, std::int64_t n, std::int64_t lo,
                                     std::int64_t hi, unsigned long long* first) {
  for (std::int64_t i = global_index(); i < n; i += grid_stride()) {
    const std::int64_t v = index[geometry.offset_of(i)];
    if (v < lo || v >= hi) atomicMin(first, static_cast<unsigned long long>(i));
  }
}

// An element moved as bytes of its size: take, gather and a plain put do no arithmetic.
template <class F>
void dispatch_size(ScalarType t, F&& f) {
  switch (element_size(t)) {
    case 1:
      return f(std::uint8_t{});
    case 2:
      return f(std::uint16_t{});
    case 4:
      return f(std::uint32_t{});
    default:
      return f(std::uint64_t{});
  }
}

std::int64_t rest_numel(const Strided& t, int from) {
  std::int64_t n = 1;
  for (int d = from; d < t.ndim; ++d) n *= t.sizes[d];
  return n;
}

template <class E>
__global__ void take_kernel(Strided dst, std::int64_t rest, Strided src_rest, const std::int64_t* index, std::int64_t scale,
                            std::int64_t base, std::int64_t n) {
  E* out = reinterpret_cast<E*>(dst.data);
  const E* in = reinterpret_cast<const E*>(src_rest.data);
  for (std::int64_t e = global_index(); e < n; e += grid_stride()) {
    const std::int64_t b = e / rest, r = e % rest;
    out[dst.offset_of(e)] = in[base + index[b] * scale + src_rest.offset_of(r)];
  }
}

template <class S>
__global__ void put_kernel(Strided dst_rest, const std::int64_t* index, std::int64_t scale, std::int64_t base, Strided src,
                           std::int64_t rest, bool accumulate, std::int64_t n) {
  S* out = reinterpret_cast<S*>(dst_rest.data);
  const S* in = reinterpret_cast<const S*>(src.data);
  for (std::int64_t e = global_index(); e < n; e += grid_stride()) {
    const std::int64_t b = e / rest, r = e % rest;
    S* at = out + base + index[b] * scale + dst_rest.offset_of(r);
    const S* from = in + src.offset_of(e);
    if (accumulate) atomic_add(at, load(from));
    else *at = *from;
  }
}

// For element e of `index` (row-major): its own offset, and where it points in a tensor of
// `strides` (its coordinates, with the index value along `dim`).
struct IndexWalk {
  Strided index;
  int dim;
  __device__ void at(std::int64_t e, const std::int64_t* strides, std::int64_t& index_off, std::int64_t& target_off) const {
    index_off = 0;
    target_off = 0;
    for (int d = index.ndim - 1; d >= 0; --d) {
      const std::int64_t c = e % index.sizes[d];
      e /= index.sizes[d];
      index_off += c * index.strides[d];
      if (d != dim) target_off += c * strides[d];
    }
  }
};

template <class S>
__global__ void gather_kernel(Strided out, Strided src, IndexWalk walk, std::int64_t n) {
  const std::int64_t* index = reinterpret_cast<const std::int64_t*>(walk.index.data);
  S* o = reinterpret_cast<S*>(out.data);
  const S* in = reinterpret_cast<const S*>(src.data);
  for (std::int64_t e = global_index(); e < n; e += grid_stride()) {
    std::int64_t index_off, src_off;
    walk.at(e, src.strides, index_off, src_off);
    o[out.offset_of(e)] = in[src_off + index[index_off] * src.strides[walk.dim]];
  }
}

template <class S>
__global__ void scatter_kernel(Strided out, Strided values, IndexWalk walk, bool accumulate, std::int64_t n) {
  const std::int64_t* index = reinterpret_cast<const std::int64_t*>(walk.index.data);
  S* o = reinterpret_cast<S*>(out.data);
  const S* v = reinterpret_cast<const S*>(values.data);
  for (std::int64_t e = global_index(); e < n; e += grid_stride()) {
    std::int64_t index_off, out_off;
    walk.at(e, out.strides, index_off, out_off);
    S* at = o + out_off + index[index_off] * out.strides[walk.dim];
    const S* from = v + values.offset_of(e);
    if (accumulate) atomic_add(at, load(from));
    else *at = *from;
  }
}

template <class S>
struct NonZero {
  const S* data;
  __device__ bool operator()(std::int64_t i) const { return load(data + i) != compute_t<S>(0); }
};

template <class S>
__global__ void count_kernel(const S* data, std::int64_t n, unsigned long long* count) {
  __shared__ unsigned long long block_count;
  if (threadIdx.x == 0) block_count = 0;
  __syncthreads();
  unsigned long long mine = 0;
  for (std::int64_t i = global_index(); i < n; i += grid_stride()) mine += load(data + i) != compute_t<S>(0);
  for (int d = 16; d > 0; d /= 2) mine += __shfl_down_sync(0xffffffffu, mine, d);
  if (threadIdx.x % 32 == 0) atomicAdd(&block_count, mine);
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(count, block_count);
}

__global__ void unravel_kernel(std::int64_t* out, const std::int64_t* positions, std::int64_t count, Strided shape) {
  for (std::int64_t k = global_index(); k < count; k += grid_stride()) {
    std::int64_t p = positions[k];
    for (int d = shape.ndim - 1; d >= 0; --d) {
      out[k * shape.ndim + d] = p % shape.sizes[d];
      p /= shape.sizes[d];
    }
  }
}

// Waits for the stream, then copies `bytes` from the device.
void read_back(void* host, const void* device, std::size_t bytes, cudaStream_t s, const char* what) {
  check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, s), what);
  check(cudaStreamSynchronize(s), what);
}

}  // namespace

std::optional<std::int64_t> first_outside(const Strided& index, std::int64_t lo, std::int64_t hi, Scratch& scratch,
                                          cudaStream_t s) {
  const std::int64_t n = index.numel();
  if (n == 0) return std::nullopt;
  auto* first = static_cast<unsigned long long*>(scratch.get(sizeof(unsigned long long)));
  check(cudaMemsetAsync(first, 0xff, sizeof *first, s), "first_outside: cudaMemsetAsync");
  first_outside_kernel<<<blocks_for(n), kThreads, 0, s>>>(reinterpret_cast<const std::int64_t*>(index.data), index, n, lo, hi,
                                                          first);
  check_launch("first_outside");
  unsigned long long at = 0;
  read_back(&at, first, sizeof at, s, "first_outside: cudaMemcpyAsync");
  if (at == ULLONG_MAX) return std::nullopt;
  std::int64_t value = 0;
  read_back(&value, reinterpret_cast<const std::int64_t*>(index.data) + index.offset_of(static_cast<std::int64_t>(at)),
            sizeof value, s, "first_outside: cudaMemcpyAsync");
  return value;
}

void take(const Strided& dst, int index_dims, const Strided& src_rest, const std::int64_t* index, std::int64_t scale,
          std::int64_t base, cudaStream_t s) {
  const std::int64_t n = dst.numel(), rest = rest_numel(dst, index_dims);
  if (n == 0) return;
  dispatch_size(dst.dtype, [&](auto tag) {
    take_kernel<decltype(tag)><<<blocks_for(n), kThreads, 0, s>>>(dst, rest, src_rest, index, scale, base, n);
  });
  check_launch("take");
}

void put(const Strided& dst_rest, const std::int64_t* index, std::int64_t scale, std::int64_t base, const Strided& src,
         int index_dims, bool accumulate, cudaStream_t s) {
  const std::int64_t n = src.numel(), rest = rest_numel(src, index_dims);
  if (n == 0) return;
  dispatch_type(dst_rest.dtype, [&](auto tag) {
    put_kernel<decltype(tag)><<<blocks_for(n), kThreads, 0, s>>>(dst_rest, index, scale, base, src, rest, accumulate, n);
  });
  check_launch("put");
}

void gather(const Strided& out, const Strided& src, int dim, const Strided& index, cudaStream_t s) {
  const std::int64_t n = index.numel();
  if (n == 0) return;
  dispatch_size(src.dtype, [&](auto tag) {
    gather_kernel<decltype(tag)><<<blocks_for(n), kThreads, 0, s>>>(out, src, IndexWalk{index, dim}, n);
  });
  check_launch("gather");
}

void scatter(const Strided& out, int dim, const Strided& index, const Strided& values, bool accumulate, cudaStream_t s) {
  const std::int64_t n = index.numel();
  if (n == 0) return;
  dispatch_type(out.dtype, [&](auto tag) {
    scatter_kernel<decltype(tag)><<<blocks_for(n), kThreads, 0, s>>>(out, values, IndexWalk{index, dim}, accumulate, n);
  });
  check_launch("scatter");
}

std::int64_t count_nonzero(const Strided& contiguous, Scratch& scratch, cudaStream_t s) {
  const std::int64_t n = contiguous.numel();
  if (n == 0) return 0;
  auto* count = static_cast<unsigned long long*>(scratch.get(sizeof(unsigned long long)));
  check(cudaMemsetAsync(count, 0, sizeof *count, s), "count_nonzero: cudaMemsetAsync");
  dispatch_type(contiguous.dtype, [&](auto tag) {
    using S = decltype(tag);
    count_kernel<S><<<blocks_for(n, 4), kThreads, 0, s>>>(reinterpret_cast<const S*>(contiguous.data), n, count);
  });
  check_launch("count_nonzero");
  unsigned long long host = 0;
  read_back(&host, count, sizeof host, s, "count_nonzero: cudaMemcpyAsync");
  return static_cast<std::int64_t>(host);
}

void nonzero_positions(const Strided& contiguous, std::int64_t* out, std::int64_t count, Scratch& scratch, cudaStream_t s) {
  const std::int64_t n = contiguous.numel();
  if (count == 0) return;
  auto* selected = static_cast<std::int64_t*>(scratch.get(sizeof(std::int64_t)));
  dispatch_type(contiguous.dtype, [&](auto tag) {
    using S = decltype(tag);
    const NonZero<S> pick{reinterpret_cast<const S*>(contiguous.data)};
    const thrust::counting_iterator<std::int64_t> positions(0);
    std::size_t bytes = 0;
    check(cub::DeviceSelect::If(nullptr, bytes, positions, out, selected, n, pick, s), "nonzero: cub::DeviceSelect::If");
    void* temp = scratch.get(bytes);
    check(cub::DeviceSelect::If(temp, bytes, positions, out, selected, n, pick, s), "nonzero: cub::DeviceSelect::If");
  });
}

void unravel(std::int64_t* out, const std::int64_t* positions, std::int64_t count, const Strided& shape, cudaStream_t s) {
  if (count == 0 || shape.ndim == 0) return;
  unravel_kernel<<<blocks_for(count), kThreads, 0, s>>>(out, positions, count, shape);
  check_launch("unravel");
}

}  // namespace memlens::cuda
