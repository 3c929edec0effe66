#pragma once
// The CUDA kernels, as host functions that queue them on a stream: one declaration per
// kernel family, defined in this folder's .cu files (the library memlens_cuda_kernels,
// which knows tensors only as Strided descriptors). cuda_kernels.cpp turns the runtime's
// tensors into these calls. Every function checks the launch and throws DeviceError
// naming the kernel and CUDA's error string.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <optional>

#include "../elementwise_fns.hpp"
#include "../kernel_args.hpp"
#include "strided_loop.hpp"

namespace memlens::cuda {

using detail::Distribution;
using detail::ScalarBits;
using detail::Window;

// Device memory a kernel needs for itself (partial sums, sort keys, CUB's scratch), from
// the caching allocator: valid until the launcher returns, after which stream order keeps
// its reuse safe.
class Scratch {
 public:
  virtual ~Scratch() = default;
  virtual void* get(std::size_t bytes) = 0;
};

// ---- elementwise (elementwise_*.cu): every operand has out's shape
void unary(fn::UnaryId id, fn::Params p, const Strided& out, const Strided& in, cudaStream_t s);
void binary(fn::BinaryId id, fn::Params p, const Strided& out, const Strided& a, const Strided& b, cudaStream_t s);
void binary_scalar(fn::BinaryId id, fn::Params p, const Strided& out, const Strided& a, ScalarBits v, bool scalar_first,
                   cudaStream_t s);
void where(const Strided& out, const Strided& cond, const Strided& a, const Strided& b, cudaStream_t s);
void fill(const Strided& out, ScalarBits v, cudaStream_t s);
// out = in converted to out's dtype (a strided copy within the device).
void convert(const Strided& out, const Strided& in, cudaStream_t s);
void triangle(const Strided& out, std::int64_t diagonal, bool lower, cudaStream_t s);
// out (contiguous, 1-D) = start + i * step; with `linspace_end`, the second half counted
// back from the end as PyTorch's linspace does.
void arange(const Strided& out, double start, double step, std::optional<double> linspace_end, cudaStream_t s);

// ---- reductions (reduce.cu). `kept` is the input over the dims that stay (its data the
// input's), `reduced` the geometry of the dims folded away.
// acc (contiguous, kept.numel() elements of float64 or int64) op= the fold of each.
void fold(const Strided& acc, const Strided& kept, const Strided& reduced, bool product, Scratch& scratch, cudaStream_t s);
// values and int64 indices (contiguous, kept.numel()) = the extreme along one dim of
// `len` elements `step` apart and its first index, NaN winning.
void extreme(const Strided& values, const Strided& indices, const Strided& kept, std::int64_t len, std::int64_t step,
             bool want_max, Scratch& scratch, cudaStream_t s);
void cumsum(const Strided& out, const Strided& src, int dim, cudaStream_t s);

// ---- indexing (index.cu)
// The first element of the int64 `index` (row-major) outside [lo, hi), read back (waits).
std::optional<std::int64_t> first_outside(const Strided& index, std::int64_t lo, std::int64_t hi, Scratch& scratch,
                                          cudaStream_t s);
void take(const Strided& dst, int index_dims, const Strided& src_rest, const std::int64_t* index, std::int64_t scale,
          std::int64_t base, cudaStream_t s);
void put(const Strided& dst_rest, const std::int64_t* index, std::int64_t scale, std::int64_t base, const Strided& src,
         int index_dims, bool accumulate, cudaStream_t s);
void gather(const Strided& out, const Strided& src, int dim, const Strided& index, cudaStream_t s);
void scatter(const Strided& out, int dim, const Strided& index, const Strided& values, bool accumulate, cudaStream_t s);
// Non-zero elements of a contiguous tensor: how many (read back, waits), then their positions.
std::int64_t count_nonzero(const Strided& contiguous, Scratch& scratch, cudaStream_t s);
void nonzero_positions(const Strided& contiguous, std::int64_t* out, std::int64_t count, Scratch& scratch, cudaStream_t s);
// out[k * ndim + d] = coordinate d of positions[k] in `shape` (its sizes).
void unravel(std::int64_t* out, const std::int64_t* positions, std::int64_t count, const Strided& shape, cudaStream_t s);
void sort(const Strided& indices, const Strided& src, int dim, bool descending, Scratch& scratch, cudaStream_t s);

// ---- random (random.cu): Philox draws, element i from (seed, i, offset), so a result
// does not depend on the launch shape; `offset` advances by kDrawsPerElement per call.
inline constexpr std::uint64_t kDrawsPerElement = 4;
void random(const Strided& out, Distribution d, double a, double b, std::uint64_t seed, std::uint64_t offset, cudaStream_t s);
void randperm(const Strided& out, std::uint64_t seed, std::uint64_t offset, Scratch& scratch, cudaStream_t s);

// ---- GEMM (blas.cu): cuBLAS (cublasGemmStridedBatchedEx, float32 accumulation for the
// 16-bit types, no TF32) for floating types, a kernel for integers. Row-major operands as
// GemmOperand describes them; cuBLAS works in `workspace` (the caller's, from the caching
// allocator), never in memory of its own. `out_dtype` is `dtype`, or float32 for 16-bit
// operands whose sum is kept unrounded.
struct Matrix {
  const void* data;
  bool transposed;
  std::int64_t ld;
  std::int64_t batch_stride;
};
void gemm(void* out, std::int64_t ldo, std::int64_t out_batch_stride, const Matrix& a, const Matrix& b, ScalarType dtype,
          ScalarType out_dtype, std::int64_t n, std::int64_t k, std::int64_t p, std::int64_t batch, cudaStream_t s,
          void* workspace, std::size_t workspace_bytes);

// ---- convolution and pooling (conv.cu): contiguous [N, C, H, W] of one floating dtype
void im2col(const Strided& cols, const Strided& x, const Window& g, cudaStream_t s);
void col2im(const Strided& x, const Strided& cols, const Window& g, cudaStream_t s);
void max_pool(const Strided& out, std::int64_t* indices, const Strided& x, const Window& g, cudaStream_t s);
void max_pool_backward(const Strided& gx, const Strided& grad, const std::int64_t* indices, const Window& g, cudaStream_t s);
void avg_pool(const Strided& out, const Strided& x, const Window& g, bool count_padding, cudaStream_t s);
void avg_pool_backward(const Strided& gx, const Strided& grad, const Window& g, bool count_padding, cudaStream_t s);

}  // namespace memlens::cuda
