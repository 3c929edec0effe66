#pragma once
// What a GPU backend computes for the runtime's ops: the kernels behind each op family,
// called by the op files where a tensor's memory is on the GPU (everything else runs the
// host loops beside them). The CUDA backend implements it (cuda/cuda_kernels.hpp); a
// build without it has none, and then no tensor can be on a GPU.
//
// Conventions: tensors are given with their geometry (sizes, strides, storage offset);
// inputs of an elementwise kernel already have the output's shape (broadcast through
// stride 0) and the compute dtype; work runs on the current stream and is ordered after
// what was queued there before.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "elementwise_fns.hpp"
#include "kernel_args.hpp"
#include "memlens/tensor/tensor.hpp"

namespace memlens::detail {

// A matrix as a GEMM reads it, row-major: stored as is (`transposed` false, rows `ld`
// elements apart) or as the row-major storage of its transpose.
struct GemmOperand {
  Tensor t;
  bool transposed;
  std::int64_t ld;
};

class GpuKernels {
 public:
  virtual ~GpuKernels() = default;

  // ---- elementwise (elementwise.cpp)
  virtual void unary(fn::UnaryId id, fn::Params p, const Tensor& out, const Tensor& in) = 0;
  virtual void binary(fn::BinaryId id, fn::Params p, const Tensor& out, const Tensor& a, const Tensor& b) = 0;
  // f(a, s), or f(s, a) with `scalar_first`.
  virtual void binary_scalar(fn::BinaryId id, fn::Params p, const Tensor& out, const Tensor& a, ScalarBits s,
                             bool scalar_first) = 0;
  virtual void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) = 0;
  virtual void fill(const Tensor& out, ScalarBits v) = 0;
  // [rows, cols] bool, true on and below (lower) or on and above the `diagonal`.
  virtual void triangle(const Tensor& out, std::int64_t diagonal, bool lower) = 0;

  // ---- copies (tensor.cpp): dst = src, src broadcast to dst's shape and converted to
  // its dtype; either side may be host memory (a transfer). Without `non_blocking` the
  // host may read or reuse host memory as soon as this returns.
  virtual void copy(const Tensor& dst, const Tensor& src, bool non_blocking) = 0;
  virtual void zero(const Tensor& contiguous) = 0;
  // `bytes` of t's storage from element `element_offset`, to host memory (waits for them).
  virtual void read(const Tensor& t, std::int64_t element_offset, void* host, std::size_t bytes) = 0;

  // ---- reductions (reduce.cpp)
  // acc (float64 or int64, contiguous, in's shape with the masked dims of size 1) folded
  // with + (or *) over the masked dims of `in`.
  virtual void fold(const Tensor& acc, const Tensor& in, const std::vector<bool>& mask, bool product) = 0;
  // For each element of `outer` (the input with the reduced dim of size 1), the extreme of
  // the `len` elements `step` apart from it and its first index (NaN wins), into the
  // contiguous `values` and int64 `indices` of outer's shape.
  virtual void extreme(const Tensor& values, const Tensor& indices, const Tensor& outer, std::int64_t len, std::int64_t step,
                       bool want_max) = 0;
  // out = the running sum of src along dim (both of one dtype; floats summed in double).
  virtual void cumsum(const Tensor& out, const Tensor& src, std::int64_t dim) = 0;

  // ---- indexing (indexing.cpp, advanced_index.cpp)
  // The first element of `index` (in row-major order) outside [lo, hi), if any.
  virtual std::optional<std::int64_t> first_outside(const Tensor& index, std::int64_t lo, std::int64_t hi) = 0;
  // dst (its first `index_dims` dims walk the contiguous int64 `index`, the rest match
  // `src_rest`'s dims) = src_rest at element offset base + index[b] * scale of its
  // storage: src_rest is an alias of the source holding only the dims kept whole, at
  // storage offset 0. `put` writes (or adds, atomically) the other way.
  virtual void take(const Tensor& dst, std::int64_t index_dims, const Tensor& src_rest, const Tensor& index, std::int64_t scale,
                    std::int64_t base) = 0;
  virtual void put(const Tensor& dst_rest, const Tensor& index, std::int64_t scale, std::int64_t base, const Tensor& src,
                   std::int64_t index_dims, bool accumulate) = 0;
  // gather: out[at] = src[at with index[at] along dim]; scatter: out[that] = (or +=) values[at].
  virtual void gather(const Tensor& out, const Tensor& src, std::int64_t dim, const Tensor& index) = 0;
  virtual void scatter(const Tensor& out, std::int64_t dim, const Tensor& index, const Tensor& values, bool accumulate) = 0;
  // The int64 positions of the non-zero elements of a contiguous tensor, in order.
  virtual Tensor nonzero_positions(const Tensor& contiguous) = 0;
  // out [count, ndim] int64: each position unravelled into coordinates of `shape`.
  virtual void unravel(const Tensor& out, const Tensor& positions, const Shape& shape) = 0;
  // int64 `indices` (src's shape) that sort src along dim, stably, NaN as the largest.
  virtual void sort(const Tensor& indices, const Tensor& src, std::int64_t dim, bool descending) = 0;

  // ---- creation and the generator (creation.cpp)
  // Values drawn from `d` (Uniform [a, b), Normal(a, b), Bernoulli(a), Integers [a, b)),
  // reproducible from the seed and the number of draws before.
  virtual void random(const Tensor& out, Distribution d, double a, double b) = 0;
  virtual void randperm(const Tensor& out) = 0;
  // out[i] = start + i * step; linspace's both-ends rule when `linspace_end` is set.
  virtual void arange(const Tensor& out, double start, double step, std::optional<double> linspace_end) = 0;
  virtual void manual_seed(std::uint64_t seed) = 0;
  virtual std::string generator_state() = 0;
  // Throws Error on a state generator_state() did not return.
  virtual void set_generator_state(const std::string& state) = 0;

  // ---- linear algebra (linalg.cpp): out (rows of unit stride, `ldo` apart) = a @ b,
  // `batch` times, each operand advancing by its batch stride (0: the same matrix). out
  // has a's dtype, or float32 for 16-bit operands (their sum kept unrounded).
  virtual void gemm(const Tensor& out, std::int64_t ldo, const GemmOperand& a, const GemmOperand& b, std::int64_t n,
                    std::int64_t k, std::int64_t p, std::int64_t batch, std::int64_t out_batch_stride,
                    std::int64_t a_batch_stride, std::int64_t b_batch_stride) = 0;

  // ---- convolution and pooling (convolution.cpp), contiguous [N, C, H, W] tensors
  virtual void im2col(const Tensor& cols, const Tensor& x, const Window& g) = 0;
  virtual void col2im(const Tensor& x, const Tensor& cols, const Window& g) = 0;
  virtual void max_pool(const Tensor& out, const Tensor& indices, const Tensor& x, const Window& g) = 0;
  virtual void max_pool_backward(const Tensor& gx, const Tensor& grad, const Tensor& indices, const Window& g) = 0;
  virtual void avg_pool(const Tensor& out, const Tensor& x, const Window& g, bool count_padding) = 0;
  virtual void avg_pool_backward(const Tensor& gx, const Tensor& grad, const Window& g, bool count_padding) = 0;
};

// Whether t's memory is on a GPU.
inline bool on_gpu(const Tensor& t) { return t.storage()->device().is_cuda(); }
// The backend for tensors on a GPU; nullptr in a build without one.
GpuKernels* gpu_backend();
// The backend, for a tensor on_gpu says is there (so one exists).
inline GpuKernels& gpu() { return *gpu_backend(); }

}  // namespace memlens::detail
