// fold(), extreme() and cumsum(). One reduction kernel serves the first two: K outputs,
// each folding R inputs (kept.offset_of(k) + reduced.offset_of(r)), either a block per
// output (the R elements of a row read together: contiguous reductions) or a thread per
// output (neighbouring outputs read neighbouring memory: reductions over outer dims).
// Within a block, partial results meet by warp shuffles and then through shared memory;
// when K alone cannot fill the device, R is cut into G groups whose partial results a
// second kernel combines, so the order of additions is fixed (results are reproducible).
#include <algorithm>
#include <cstring>

#include "launch.hpp"
#include "device_types.cuh"

namespace memlens::cuda {

namespace {

constexpr int kWarp = 32;

// Any 4-byte-multiple value, shuffled word by word.
template <class T>
__device__ T shuffle_down(T x, int delta) {
  static_assert(sizeof(T) % 4 == 0, "shuffled values are whole words");
  constexpr int kWords = sizeof(T) / 4;
  int words[kWords];
  memcpy(words, &x, sizeof(T));
#pragma unroll
  for (int w = 0; w < kWords; ++w) words[w] = __shfl_down_sync(0xffffffffu, words[w], delta);
  memcpy(&x, words, sizeof(T));
  return x;
}

// + or * into a float64 or int64 accumulator (acc[k] op= the fold).
template <class A, bool kProduct>
struct FoldOp {
  using Acc = A;
  A* acc;
  __device__ static A identity() { return kProduct ? A(1) : A(0); }
  __device__ A combine(A a, A b) const { return kProduct ? a * b : a + b; }
  template <class C>
  __device__ A element(C v, std::int64_t) const {
    return static_cast<A>(v);
  }
  __device__ void finish(std::int64_t k, A v) const { acc[k] = combine(acc[k], v); }
};

template <class C>
struct Best {
  C v;
  std::int64_t i;  // -1: no element yet
};

// The largest (or smallest) and its first index; a NaN beats any number, the first NaN
// any later one, as the host's scan in order decides.
template <class S>
struct ExtremeOp {
  using C = compute_t<S>;
  using Acc = Best<C>;
  S* values;
  std::int64_t* indices;
  bool want_max;
  __device__ static Acc identity() { return {C(0), -1}; }
  __device__ Acc combine(Acc a, Acc b) const {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    const bool na = a.v != a.v, nb = b.v != b.v;
    if (na || nb) return na && nb ? (a.i < b.i ? a : b) : na ? a : b;
    if (want_max ? b.v > a.v : b.v < a.v) return b;
    if (a.v == b.v && b.i < a.i) return b;
    return a;
  }
  __device__ Acc element(C v, std::int64_t r) const { return {v, r}; }
  __device__ void finish(std::int64_t k, Acc v) const {
    values[k] = to_storage<S>(v.v);
    indices[k] = v.i;
  }
};

struct Plan {
  Strided kept, reduced;
  std::int64_t outputs, length;  // K, R
  std::int64_t groups, chunk;    // G groups of `chunk` elements of R
  bool block_per_output;
};

template <class Op>
__device__ typename Op::Acc block_reduce(const Op& op, typename Op::Acc v) {
  using Acc = typename Op::Acc;
  __shared__ alignas(16) unsigned char storage[kWarp * sizeof(Acc)];
  Acc* warp_results = reinterpret_cast<Acc*>(storage);
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  for (int d = kWarp / 2; d > 0; d /= 2) v = op.combine(v, shuffle_down(v, d));
  if (lane == 0) warp_results[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x / kWarp) ? warp_results[lane] : Op::identity();
    for (int d = kWarp / 2; d > 0; d /= 2) v = op.combine(v, shuffle_down(v, d));
  }
  return v;
}

template <class Op, class S>
__global__ void reduce_kernel(Op op, Plan plan, typename Op::Acc* partial) {
  using Acc = typename Op::Acc;
  const S* in = reinterpret_cast<const S*>(plan.kept.data);
  const std::int64_t g = blockIdx.y;
  const std::int64_t begin = g * plan.chunk;
  const std::int64_t end = begin + plan.chunk < plan.length ? begin + plan.chunk : plan.length;
  if (plan.block_per_output) {
    const std::int64_t k = blockIdx.x;
    const std::int64_t base = plan.kept.offset_of(k);
    Acc v = Op::identity();
    for (std::int64_t r = begin + threadIdx.x; r < end; r += blockDim.x)
      v = op.combine(v, op.element(load(in + base + plan.reduced.offset_of(r)), r));
    v = block_reduce(op, v);
    if (threadIdx.x == 0) {
      if (partial) partial[g * plan.outputs + k] = v;
      else op.finish(k, v);
    }
    return;
  }
  const std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= plan.outputs) return;
  const std::int64_t base = plan.kept.offset_of(k);
  Acc v = Op::identity();
  for (std::int64_t r = begin; r < end; ++r) v = op.combine(v, op.element(load(in + base + plan.reduced.offset_of(r)), r));
  if (partial) partial[g * plan.outputs + k] = v;
  else op.finish(k, v);
}

// The groups' partial results combined in group order, one thread per output.
template <class Op>
__global__ void combine_kernel(Op op, const typename Op::Acc* partial, std::int64_t outputs, std::int64_t groups) {
  for (std::int64_t k = global_index(); k < outputs; k += grid_stride()) {
    typename Op::Acc v = partial[k];
    for (std::int64_t g = 1; g < groups; ++g) v = op.combine(v, partial[g * outputs + k]);
    op.finish(k, v);
  }
}

Plan make_plan(const Strided& kept, const Strided& reduced) {
  Plan plan{coalesced(kept), coalesced(reduced), kept.numel(), reduced.numel(), 1, 0, false};
  const std::int64_t K = plan.outputs, R = plan.length;
  const bool rows_dense = plan.reduced.ndim > 0 && plan.reduced.strides[plan.reduced.ndim - 1] == 1;
  plan.block_per_output = K == 1 || (rows_dense && R >= kWarp);
  // Enough blocks (or threads) to fill an H100-class device, each group long enough to
  // be worth its partial result.
  auto ceil_div = [](std::int64_t a, std::int64_t b) { return (a + b - 1) / b; };
  std::int64_t groups = plan.block_per_output ? std::min(ceil_div(R, kThreads * 8), ceil_div(264, K))
                                              : std::min(ceil_div(R, 64), ceil_div(270336, K));
  plan.groups = std::max<std::int64_t>(1, std::min<std::int64_t>(groups, 1024));
  plan.chunk = ceil_div(std::max<std::int64_t>(R, 1), plan.groups);
  return plan;
}

template <class S, class Op>
void run(const Op& op, const Plan& plan, Scratch& scratch, cudaStream_t s, const char* name) {
  using Acc = typename Op::Acc;
  if (plan.outputs == 0) return;
  Acc* partial = plan.groups > 1 ? static_cast<Acc*>(scratch.get(sizeof(Acc) * plan.outputs * plan.groups)) : nullptr;
  const dim3 grid(static_cast<unsigned>(plan.block_per_output ? plan.outputs : (plan.outputs + kThreads - 1) / kThreads),
                  static_cast<unsigned>(plan.groups));
  reduce_kernel<Op, S><<<grid, kThreads, 0, s>>>(op, plan, partial);
  check_launch(name);
  if (partial) {
    combine_kernel<Op><<<blocks_for(plan.outputs), kThreads, 0, s>>>(op, partial, plan.outputs, plan.groups);
    check_launch(name);
  }
}

template <class S, class A>
__global__ void cumsum_kernel(S* out, const S* src, Strided out_lines, Strided src_lines, std::int64_t len, std::int64_t out_step,
                              std::int64_t in_step, std::int64_t lines) {
  for (std::int64_t l = global_index(); l < lines; l += grid_stride()) {
    const S* x = src + src_lines.offset_of(l);
    S* y = out + out_lines.offset_of(l);
    A acc = 0;
    for (std::int64_t k = 0; k < len; ++k) {
      acc += static_cast<A>(load(x + k * in_step));
      y[k * out_step] = to_storage<S>(acc);
    }
  }
}

}  // namespace

void fold(const Strided& acc, const Strided& kept, const Strided& reduced, bool product, Scratch& scratch, cudaStream_t s) {
  const Plan plan = make_plan(kept, reduced);
  dispatch_type(kept.dtype, [&](auto tag) {
    using S = decltype(tag);
    auto go = [&](auto acc_tag) {
      using A = decltype(acc_tag);
      A* a = reinterpret_cast<A*>(acc.data);
      if (product) run<S>(FoldOp<A, true>{a}, plan, scratch, s, "fold (prod)");
      else run<S>(FoldOp<A, false>{a}, plan, scratch, s, "fold (sum)");
    };
    if (acc.dtype == kFloat64) go(double{});
    else go(std::int64_t{});
  });
}

void extreme(const Strided& values, const Strided& indices, const Strided& kept, std::int64_t len, std::int64_t step,
             bool want_max, Scratch& scratch, cudaStream_t s) {
  Strided reduced;
  reduced.ndim = 1;
  reduced.sizes[0] = len;
  reduced.strides[0] = step;
  const Plan plan = make_plan(kept, reduced);
  dispatch_type(kept.dtype, [&](auto tag) {
    using S = decltype(tag);
    run<S>(ExtremeOp<S>{reinterpret_cast<S*>(values.data), reinterpret_cast<std::int64_t*>(indices.data), want_max}, plan,
           scratch, s, "extreme");
  });
}

void cumsum(const Strided& out, const Strided& src, int dim, cudaStream_t s) {
  const std::int64_t len = out.sizes[dim], lines = len == 0 ? 0 : out.numel() / len;
  if (lines == 0) return;
  dispatch_type(out.dtype, [&](auto tag) {
    using S = decltype(tag);
    using A = std::conditional_t<is_floating<S>, double, std::int64_t>;
    cumsum_kernel<S, A><<<blocks_for(lines), kThreads, 0, s>>>(
        reinterpret_cast<S*>(out.data), reinterpret_cast<const S*>(src.data), without_dim(out, dim), without_dim(src, dim), len,
        out.strides[dim], src.strides[dim], lines);
  });
  check_launch("cumsum");
}

}  // namespace memlens::cuda
