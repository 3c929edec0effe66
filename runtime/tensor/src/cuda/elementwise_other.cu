// where(), fill(), convert(), triangle() and arange(): the elementwise kernels that are
// not a function of elementwise_fns.hpp.
#include "launch.hpp"
#include "map_kernel.cuh"

namespace memlens::cuda {

namespace {

struct Select {
  template <class C>
  __device__ C operator()(bool c, C a, C b) const {
    return c ? a : b;
  }
};

template <class C>
struct Constant {
  C value;
  __device__ C operator()() const { return value; }
};

struct Identity {
  template <class C>
  __device__ C operator()(C v) const {
    return v;
  }
};

__global__ void triangle_kernel(bool* out, std::int64_t rows, std::int64_t cols, std::int64_t diagonal, bool lower) {
  for (std::int64_t i = global_index(); i < rows * cols; i += grid_stride()) {
    const std::int64_t r = i / cols, c = i % cols;
    out[i] = lower ? c - r <= diagonal : c - r >= diagonal;
  }
}

template <class S>
__global__ void arange_kernel(S* out, std::int64_t n, double start, double step, bool linspace, double end) {
  for (std::int64_t i = global_index(); i < n; i += grid_stride()) {
    const double v = linspace && i >= n / 2 ? end - step * static_cast<double>(n - 1 - i) : start + step * static_cast<double>(i);
    out[i] = to_storage<S>(v);
  }
}

}  // namespace

void where(const Strided& out, const Strided& cond, const Strided& a, const Strided& b, cudaStream_t s) {
  const Strided* ops[4] = {&out, &cond, &a, &b};
  const Loop<4> loop = make_loop(ops);
  dispatch_type(out.dtype, [&](auto tag) {
    using S = decltype(tag);
    launch_map<S, bool, S, S>(loop, Select{}, s, "where");
  });
}

void fill(const Strided& out, ScalarBits v, cudaStream_t s) {
  const Strided* ops[1] = {&out};
  const Loop<1> loop = make_loop(ops);
  dispatch_type(out.dtype, [&](auto tag) {
    using S = decltype(tag);
    using C = compute_t<S>;
    launch_map<S>(loop, Constant<C>{is_floating<S> ? static_cast<C>(v.d) : static_cast<C>(v.i)}, s, "fill");
  });
}

void convert(const Strided& out, const Strided& in, cudaStream_t s) {
  const Strided* ops[2] = {&out, &in};
  const Loop<2> loop = make_loop(ops);
  dispatch_type(out.dtype, [&](auto out_tag) {
    dispatch_type(in.dtype,
                  [&](auto in_tag) { launch_map<decltype(out_tag), decltype(in_tag)>(loop, Identity{}, s, "convert"); });
  });
}

void triangle(const Strided& out, std::int64_t diagonal, bool lower, cudaStream_t s) {
  const std::int64_t rows = out.sizes[0], cols = out.sizes[1];
  if (rows * cols == 0) return;
  triangle_kernel<<<blocks_for(rows * cols), kThreads, 0, s>>>(reinterpret_cast<bool*>(out.data), rows, cols, diagonal, lower);
  check_launch("triangle");
}

void arange(const Strided& out, double start, double step, std::optional<double> linspace_end, cudaStream_t s) {
  const std::int64_t n = out.numel();
  if (n == 0) return;
  dispatch_type(out.dtype, [&](auto tag) {
    using S = decltype(tag);
    arange_kernel<S><<<blocks_for(n), kThreads, 0, s>>>(reinterpret_cast<S*>(out.data), n, start, step, linspace_end.has_value(),
                                                        linspace_end.value_or(0));
  });
  check_launch("arange");
}

}  // namespace memlens::cuda
