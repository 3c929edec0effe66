#pragma once
// What a CUDA kernel knows of its tensors: a pointer, a dtype and a geometry, passed by
// value, and for elementwise work the operands' geometry merged into one loop. The index
// math is host-and-device code, so the host tests check it (tests/test_cuda_geometry.cpp)
// where no GPU is.
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "../elementwise_fns.hpp"
#include "memlens/common/scalar_type.hpp"

namespace memlens::cuda {

inline constexpr int kMaxDims = 16;

// A tensor as a kernel sees it: element 0, its dtype, and sizes and strides in elements.
struct Strided {
  char* data = nullptr;
  ScalarType dtype = kFloat32;
  int ndim = 0;
  std::int64_t sizes[kMaxDims] = {};
  std::int64_t strides[kMaxDims] = {};

  MEMLENS_HD std::int64_t numel() const {
    std::int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= sizes[d];
    return n;
  }
  // The element offset of the i-th element in row-major order.
  MEMLENS_HD std::int64_t offset_of(std::int64_t i) const {
    std::int64_t off = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const std::int64_t at = i % sizes[d];
      i /= sizes[d];
      off += at * strides[d];
    }
    return off;
  }
};

// N operands of one shape walked together (operand 0 is written): dims of size 1 are
// dropped and adjacent dims merged where every operand is contiguous across them, so a
// dense tensor is one dim whatever its shape, and the division per dim in offsets() is
// paid only for the dims that are really strided.
template <int N>
struct Loop {
  std::int64_t numel = 0;
  int ndim = 0;
  std::int64_t sizes[kMaxDims] = {};
  std::int64_t strides[N][kMaxDims] = {};
  char* data[N] = {};
  ScalarType dtype[N] = {};
  // Every operand dense in row-major order: element i is at offset i in each.
  bool contiguous = false;

  MEMLENS_HD void offsets(std::int64_t i, std::int64_t (&off)[N]) const {
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const std::int64_t at = i % sizes[d];
      i /= sizes[d];
      for (int k = 0; k < N; ++k) off[k] += at * strides[k][d];
    }
  }
};

// Operands must share operand 0's sizes (inputs broadcast through stride 0 already).
template <int N>
Loop<N> make_loop(const Strided* const (&ops)[N]) {
  Loop<N> loop;
  loop.numel = ops[0]->numel();
  for (int k = 0; k < N; ++k) {
    loop.data[k] = ops[k]->data;
    loop.dtype[k] = ops[k]->dtype;
  }
  for (int d = 0; d < ops[0]->ndim; ++d) {
    const std::int64_t size = ops[0]->sizes[d];
    if (size == 1) continue;
    if (loop.ndim > 0) {
      bool merge = true;
      for (int k = 0; k < N; ++k) merge = merge && loop.strides[k][loop.ndim - 1] == ops[k]->strides[d] * size;
      if (merge) {
        loop.sizes[loop.ndim - 1] *= size;
        for (int k = 0; k < N; ++k) loop.strides[k][loop.ndim - 1] = ops[k]->strides[d];
        continue;
      }
    }
    loop.sizes[loop.ndim] = size;
    for (int k = 0; k < N; ++k) loop.strides[k][loop.ndim] = ops[k]->strides[d];
    ++loop.ndim;
  }
  loop.contiguous = loop.ndim == 0 || loop.ndim == 1;
  for (int k = 0; k < N && loop.ndim == 1; ++k) loop.contiguous = loop.contiguous && loop.strides[k][0] == 1;
  return loop;
}

// A dim list of at most kMaxDims, or the error a GPU op gives past that.
inline void check_dims(int ndim) {
  if (ndim > kMaxDims)
    throw std::invalid_argument("a tensor of " + std::to_string(ndim) + " dims is more than the " + std::to_string(kMaxDims) +
                                " a GPU kernel takes");
}

// A geometry of its own (sizes and strides over some of a tensor's dims), e.g. the kept
// and the reduced dims of a reduction, merged as make_loop merges them.
inline Strided coalesced(const Strided& t) {
  const Strided* ops[1] = {&t};
  Loop<1> loop = make_loop(ops);
  Strided out;
  out.data = t.data;
  out.dtype = t.dtype;
  out.ndim = loop.ndim;
  for (int d = 0; d < loop.ndim; ++d) {
    out.sizes[d] = loop.sizes[d];
    out.strides[d] = loop.strides[0][d];
  }
  return out;
}

// t without dim `dim` (the lines along it, each addressed from its first element).
inline Strided without_dim(const Strided& t, int dim) {
  Strided out = t;
  out.ndim = 0;
  for (int d = 0; d < t.ndim; ++d)
    if (d != dim) {
      out.sizes[out.ndim] = t.sizes[d];
      out.strides[out.ndim] = t.strides[d];
      ++out.ndim;
    }
  return out;
}

}  // namespace memlens::cuda
