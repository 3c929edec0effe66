// mm, bmm and PyTorch's matmul rules, with BLAS doing the arithmetic for float types.
#include <cblas.h>

#include "autocast.hpp"
#include "tensor_internal.hpp"

namespace memlens {

using namespace detail;
using autograd::Node;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

namespace {

// How the matrices in the last two dims of `m` can be handed to BLAS without a copy:
// row-major as they are, or as the transpose of a row-major matrix; else a contiguous copy.
GemmOperand blas_operand(const Tensor& m) {
  const std::int64_t rows = m.size(-2), cols = m.size(-1);
  if (m.stride(-1) == 1 && m.stride(-2) >= std::max<std::int64_t>(1, cols)) return {m, false, m.stride(-2)};
  if (m.stride(-2) == 1 && m.stride(-1) >= std::max<std::int64_t>(1, rows)) return {m, true, m.stride(-1)};
  Tensor c = layout_copy(m, instrument::CopyReason::OpInternal);
  return {c, false, std::max<std::int64_t>(1, cols)};
}

CBLAS_TRANSPOSE cblas_trans(const GemmOperand& o) { return o.transposed ? CblasTrans : CblasNoTrans; }

// out[i] = a[i] @ b[i] for i < batch on the GPU, each [n x k] @ [k x p], batch dim 0 (one
// strided-batched GEMM).
void gpu_gemm_batched(const Tensor& out, const Tensor& a, const Tensor& b) {
  GemmOperand x = blas_operand(a), y = blas_operand(b);
  gpu().gemm(out, out.stride(-2), x, y, a.size(-2), a.size(-1), b.size(-1), a.size(0), out.stride(0), x.t.stride(0),
             y.t.stride(0));
}

// out (n x p, rows of unit stride: a contiguous matrix or a slice of a batch) = a (n x m) @ b (m x p).
void gemm_into(const Tensor& out, const Tensor& a, const Tensor& b) {
  int n = static_cast<int>(a.size(0)), k = static_cast<int>(a.size(1)), p = static_cast<int>(b.size(1));
  if (n == 0 || p == 0) return;
  if (k == 0) {
    copy_into(out, zeros({}, TensorOptions(out.dtype()).device(out.device())));
    return;
  }
  if (on_gpu(out)) {
    gpu().gemm(out, out.stride(0), blas_operand(a), blas_operand(b), n, k, p, 1, 0, 0, 0);
    return;
  }
  if (a.dtype() == kFloat16 || a.dtype() == kBFloat16) {
    // BLAS has no 16-bit GEMM (Debian's OpenBLAS is built without its bfloat16 one):
    // float32 operands and accumulation (the GEMM's own packing workspace), the result
    // rounded once into a 16-bit `out` or kept in a float32 one (an op that adds to it
    // before rounding), as PyTorch's CPU kernels compute them.
    if (out.dtype() == kFloat32) return gemm_into(out, opmath(a), opmath(b));
    Tensor result = make_tensor({n, p}, kFloat32, out.device());
    gemm_into(result, opmath(a), opmath(b));
    copy_into(out, result);
    return;
  }
  if (a.dtype() == kFloat32 || a.dtype() == kFloat64) {
    GemmOperand x = blas_operand(a), y = blas_operand(b);
    const int lx = static_cast<int>(x.ld), ly = static_cast<int>(y.ld), lo = static_cast<int>(out.stride(0));
    if (a.dtype() == kFloat32)
      cblas_sgemm(CblasRowMajor, cblas_trans(x), cblas_trans(y), n, p, k, 1.0f, static_cast<const float*>(x.t.raw_data()), lx,
                  static_cast<const float*>(y.t.raw_data()), ly, 0.0f, static_cast<float*>(out.raw_data()), lo);
    else
      cblas_dgemm(CblasRowMajor, cblas_trans(x), cblas_trans(y), n, p, k, 1.0, static_cast<const double*>(x.t.raw_data()), lx,
                  static_cast<const double*>(y.t.raw_data()), ly, 0.0, static_cast<double*>(out.raw_data()), lo);
    return;
  }
  // Integer matmul: no BLAS for it; a plain triple loop over strides.
  dispatch(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* ap = static_cast<const T*>(a.raw_data());
    const T* bp = static_cast<const T*>(b.raw_data());
    T* op = static_cast<T*>(out.raw_data());
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < p; ++j) {
        T acc{};
        for (int q = 0; q < k; ++q)
          acc = static_cast<T>(acc + ap[i * a.stride(0) + q * a.stride(1)] * bp[q * b.stride(0) + j * b.stride(1)]);
        op[i * out.stride(0) + j] = acc;
      }
  });
}

ShapeError product_shapes_error(std::int64_t n, std::int64_t k, std::int64_t k2, std::int64_t p) {
  return ShapeError("mat1 and mat2 shapes cannot be multiplied (" + std::to_string(n) + "x" + std::to_string(k) + " and " +
                    std::to_string(k2) + "x" + std::to_string(p) + ")");
}

void check_matmul_types(const Tensor& a, const Tensor& b, const char* op) {
  check_same_device(a, b, op);
  if (a.dtype() != b.dtype())
    throw TypeError("expected m1 and m2 to have the same dtype, but got: " + std::string(type_name(a.dtype())) +
                    " != " + std::string(type_name(b.dtype())));
  if (a.dtype() == kBool) throw TypeError(std::string(op) + " is not implemented for bool tensors");
}

}  // namespace

Tensor Tensor::mm(const Tensor& o) const {
  MEMLENS_API_ENTRY();
  if (auto r = autocast::run(
          "mm", [](const Tensor& a, const Tensor& b) { return a.mm(b); }, *this, o))
    return *r;
  check_matmul_types(*this, o, "mm");
  if (dim() != 2) throw ShapeError("self must be a matrix");
  if (o.dim() != 2) throw ShapeError("mat2 must be a matrix");
  if (size(1) != o.size(0)) throw product_shapes_error(size(0), size(1), o.size(0), o.size(1));
  OpTrace trace;
  Tensor out = make_tensor({size(0), o.size(1)}, dtype(), device());
  gemm_into(out, *this, o);
  trace.done("mm", {this, &o}, out);
  autograd::record(out, "MmBackward0", {*this, o}, [a = SavedTensor(*this), b = SavedTensor(o)](const Tensor& g, const Node& n) {
    return Grads{n.needs_input_grad(0) ? g.mm(b.unpack(n).t()) : Tensor(),
                 n.needs_input_grad(1) ? a.unpack(n).t().mm(g) : Tensor()};
  });
  return out;
}

Tensor Tensor::bmm(const Tensor& o) const {
  MEMLENS_API_ENTRY();
  if (auto r = autocast::run(
          "bmm", [](const Tensor& a, const Tensor& b) { return a.bmm(b); }, *this, o))
    return *r;
  check_matmul_types(*this, o, "bmm");
  if (dim() != 3) throw ShapeError("batch1 must be a 3D tensor");
  if (o.dim() != 3) throw ShapeError("batch2 must be a 3D tensor");
  if (size(0) != o.size(0) || size(2) != o.size(1))
    throw ShapeError("Expected size for first two dimensions of batch2 tensor to be: [" + std::to_string(size(0)) + ", " +
                     std::to_string(size(2)) + "] but got: [" + std::to_string(o.size(0)) + ", " + std::to_string(o.size(1)) +
                     "].");
  OpTrace trace;
  Tensor out = make_tensor({size(0), size(1), o.size(2)}, dtype(), device());
  const bool on_device = on_gpu(out) && size(1) > 0 && o.size(2) > 0 && size(2) > 0;
  if (on_device) gpu_gemm_batched(out, *this, o);
  for (std::int64_t i = 0; i < size(0) && !on_device; ++i) {
    Tensor oi = as_strided_alias(out, {size(1), o.size(2)}, {out.stride(1), 1}, i * out.stride(0));
    Tensor ai = as_strided_alias(*this, {size(1), size(2)}, {stride(1), stride(2)}, storage_offset() + i * stride(0));
    Tensor bi = as_strided_alias(o, {o.size(1), o.size(2)}, {o.stride(1), o.stride(2)}, o.storage_offset() + i * o.stride(0));
    gemm_into(oi, ai, bi);
  }
  trace.done("bmm", {this, &o}, out);
  autograd::record(out, "BmmBackward0", {*this, o}, [a = SavedTensor(*this), b = SavedTensor(o)](const Tensor& g, const Node& n) {
    return Grads{n.needs_input_grad(0) ? g.bmm(b.unpack(n).transpose(1, 2)) : Tensor(),
                 n.needs_input_grad(1) ? a.unpack(n).transpose(1, 2).bmm(g) : Tensor()};
  });
  return out;
}

// PyTorch's matmul: dot, mv, vm, mm, and broadcast batched forms, built from mm/bmm and
// views so autograd follows without code of its own.
Tensor Tensor::matmul(const Tensor& o) const {
  MEMLENS_API_ENTRY();
  if (auto r = autocast::run(
          "matmul", [](const Tensor& a, const Tensor& b) { return a.matmul(b); }, *this, o))
    return *r;
  check_matmul_types(*this, o, "matmul");
  std::int64_t da = dim(), db = o.dim();
  if (da == 0 || db == 0)
    throw ShapeError("both arguments to matmul need to be at least 1D, but they are " + std::to_string(da) + "D and " +
                     std::to_string(db) + "D");
  if (da == 1 && db == 1) {
    if (size(0) != o.size(0))
      throw ShapeError("inconsistent tensor size, expected tensor [" + std::to_string(size(0)) + "] and src [" +
                       std::to_string(o.size(0)) + "] to have the same number of elements, but got " + std::to_string(size(0)) +
                       " and " + std::to_string(o.size(0)) + " elements respectively");
    return unsqueeze(0).mm(o.unsqueeze(1)).reshape({});
  }
  if (da == 2 && db == 1) {
    if (size(1) != o.size(0))
      throw ShapeError("size mismatch, got input (" + std::to_string(size(0)) + "x" + std::to_string(size(1)) + "), vec (" +
                       std::to_string(o.size(0)) + ")");
    return mm(o.unsqueeze(1)).squeeze(1);
  }
  if (da == 1 && db == 2) {
    if (size(0) != o.size(0))
      throw ShapeError("mat1 and mat2 shapes cannot be multiplied (1x" + std::to_string(size(0)) + " and " +
                       std::to_string(o.size(0)) + "x" + std::to_string(o.size(1)) + ")");
    return unsqueeze(0).mm(o).squeeze(0);
  }
  if (da == 2 && db == 2) return mm(o);
  // Batched: the batch dims broadcast and walked in place.
  Tensor a = da == 1 ? unsqueeze(0) : *this;
  Tensor b = db == 1 ? o.unsqueeze(1) : o;
  Tensor out = batched_matmul(a, b);
  if (da > 1 && db > 1) return out;
  Shape result(out.sizes().begin(), out.sizes().end() - 2);
  if (da > 1) result.push_back(out.size(-2));
  if (db > 1) result.push_back(out.size(-1));
  return out.reshape(result);
}

namespace {
void record_matmul(Tensor& out, const Tensor& a, const Tensor& b) {
  autograd::record(out, "MatmulBackward0", {a, b}, [sa = SavedTensor(a), sb = SavedTensor(b)](const Tensor& g, const Node& node) {
    Tensor av = sa.unpack(node), bv = sb.unpack(node);
    return Grads{node.needs_input_grad(0) ? autograd::sum_to(g.matmul(bv.transpose(-2, -1)), av.sizes()) : Tensor(),
                 node.needs_input_grad(1) ? autograd::sum_to(av.transpose(-2, -1).matmul(g), bv.sizes()) : Tensor()};
  });
}
}  // namespace

namespace detail {

Tensor batched_matmul(const Tensor& a, const Tensor& b, const Shape& memory_order, bool unrounded) {
  std::int64_t n = a.size(-2), k = a.size(-1), k2 = b.size(-2), p = b.size(-1);
  if (k != k2) throw product_shapes_error(n, k, k2, p);
  Shape batch = broadcast_shapes(Shape(a.sizes().begin(), a.sizes().end() - 2), Shape(b.sizes().begin(), b.sizes().end() - 2));
  Shape shape = batch, ea = batch, eb = batch;
  shape.insert(shape.end(), {n, p});
  ea.insert(ea.end(), {n, k});
  eb.insert(eb.end(), {k, p});
  OpTrace trace;
  Tensor out;
  const ScalarType out_type = unrounded ? opmath_type(a.dtype()) : a.dtype();
  if (memory_order.empty()) {
    out = make_tensor(shape, out_type, a.device());
  } else {
    // Allocate in memory order, then present the dims in their logical order.
    if (memory_order.size() != shape.size() || memory_order.back() != static_cast<std::int64_t>(shape.size()) - 1)
      throw Error("batched_matmul: the memory order must permute every dim and keep the last one last");
    Shape in_memory(shape.size()), strides(shape.size());
    for (std::size_t i = 0; i < shape.size(); ++i) in_memory[i] = shape[static_cast<std::size_t>(memory_order[i])];
    Tensor m = make_tensor(in_memory, out_type, a.device());
    for (std::size_t i = 0; i < shape.size(); ++i)
      strides[static_cast<std::size_t>(memory_order[i])] = m.stride(static_cast<std::int64_t>(i));
    out = as_strided_alias(m, shape, strides, 0);
  }
  Tensor x = expand_alias(a, ea), y = expand_alias(b, eb);
  if (on_gpu(out) && !batch.empty() && n > 0 && p > 0 && k > 0) {
    // One strided-batched GEMM over the last batch dim for each index of the others.
    const std::size_t outer_dims = batch.size() - 1;
    Shape index(outer_dims, 0);
    for (std::int64_t i = 0, count = numel_of(Shape(batch.begin(), batch.end() - 1)); i < count; ++i) {
      auto last = [&](const Tensor& t, std::int64_t rows, std::int64_t cols) {
        std::int64_t off = t.storage_offset();
        for (std::size_t d = 0; d < outer_dims; ++d) off += index[d] * t.strides()[d];
        return as_strided_alias(t, {batch.back(), rows, cols}, {t.stride(-3), t.stride(-2), t.stride(-1)}, off);
      };
      gpu_gemm_batched(last(out, n, p), last(x, n, k), last(y, k, p));
      for (std::size_t d = outer_dims; d-- > 0;) {
        if (++index[d] < batch[d]) break;
        index[d] = 0;
      }
    }
    trace.done("matmul", {&a, &b}, out);
    record_matmul(out, a, b);
    return out;
  }
  const std::size_t nd = batch.size();
  Shape index(nd, 0);
  for (std::int64_t i = 0, count = numel_of(batch); i < count; ++i) {
    std::int64_t ox = x.storage_offset(), oy = y.storage_offset(), oo = out.storage_offset();
    for (std::size_t d = 0; d < nd; ++d)
      ox += index[d] * x.strides()[d], oy += index[d] * y.strides()[d], oo += index[d] * out.strides()[d];
    gemm_into(as_strided_alias(out, {n, p}, {out.stride(-2), out.stride(-1)}, oo),
              as_strided_alias(x, {n, k}, {x.stride(-2), x.stride(-1)}, ox),
              as_strided_alias(y, {k, p}, {y.stride(-2), y.stride(-1)}, oy));
    for (std::size_t d = nd; d-- > 0;) {  // next batch index, last dim fastest
      if (++index[d] < batch[d]) break;
      index[d] = 0;
    }
  }
  trace.done("matmul", {&a, &b}, out);
  record_matmul(out, a, b);
  return out;
}

}  // namespace detail

Tensor Tensor::dot(const Tensor& o) const {
  MEMLENS_API_ENTRY();
  if (dim() != 1 || o.dim() != 1)
    throw ShapeError("1D tensors expected, but got " + std::to_string(dim()) + "D and " + std::to_string(o.dim()) + "D tensors");
  return matmul(o);
}

Tensor Tensor::mv(const Tensor& v) const {
  MEMLENS_API_ENTRY();
  if (dim() != 2 || v.dim() != 1)
    throw ShapeError("vector + matrix @ vector expected, got " + std::to_string(dim()) + ", " + std::to_string(v.dim()));
  return matmul(v);
}

namespace {

// beta * input + alpha * (m1 @ m2), batched or not, as one op: the product's float32 sum
// (16-bit operands) is scaled and added to before it is rounded once, as PyTorch's
// addmm and baddbmm compute it; with beta 0 the input is not read (NaN in it stays out).
Tensor add_product(const Tensor& input, const Tensor& m1, const Tensor& m2, Scalar beta, Scalar alpha, bool batched) {
  const char* op = batched ? "baddbmm" : "addmm";
  if (auto r = autocast::run(
          op, [&](const Tensor& in, const Tensor& a, const Tensor& b) { return add_product(in, a, b, beta, alpha, batched); },
          input, m1, m2))
    return *r;
  check_matmul_types(m1, m2, op);
  check_same_device(input, m1, op);
  const std::int64_t rank = batched ? 3 : 2;
  if (m1.dim() != rank || m2.dim() != rank)
    throw ShapeError(std::string(op) + ": expected " + std::to_string(rank) + "-D operands, got " + shape_str(m1.sizes()) +
                     " and " + shape_str(m2.sizes()));
  if (input.dtype() != m1.dtype())
    throw TypeError(std::string(op) + ": self and mat1 must have the same dtype, but got " +
                    std::string(type_name(input.dtype())) + " and " + std::string(type_name(m1.dtype())));
  const double b = beta.to_double(), al = alpha.to_double();
  Tensor out;
  {
    NoGradGuard no_grad;
    OpTrace trace;
    Tensor sum = batched ? detail::batched_matmul(m1, m2, {}, true) : Tensor();
    if (!batched) {
      if (m1.size(1) != m2.size(0)) throw product_shapes_error(m1.size(0), m1.size(1), m2.size(0), m2.size(1));
      sum = make_tensor({m1.size(0), m2.size(1)}, opmath_type(m1.dtype()), m1.device());
      gemm_into(sum, m1, m2);
    }
    const Shape shape = broadcast_shapes(input.sizes(), sum.sizes());
    if (shape != sum.sizes())
      throw ShapeError(std::string(op) + ": the input " + shape_str(input.sizes()) + " does not broadcast to the product's " +
                       shape_str(sum.sizes()));
    if (al != 1) sum.mul_(alpha);
    if (b != 0) sum.add_(input, beta);
    out = rounded(sum, m1.dtype());
    trace.done(op, {&input, &m1, &m2}, out);
  }
  autograd::record(out, batched ? "BaddbmmBackward0" : "AddmmBackward0", {input, m1, m2},
                   [sa = SavedTensor(m1), sb = SavedTensor(m2), in = input.sizes(), b, al](const Tensor& g, const Node& n) {
                     Tensor av = sa.unpack(n), bv = sb.unpack(n);
                     auto scaled = [](Tensor t, double k) { return k == 1 ? t : t * k; };
                     return Grads{n.needs_input_grad(0) ? autograd::sum_to(scaled(g, b), in) : Tensor(),
                                  n.needs_input_grad(1) ? scaled(g.matmul(bv.transpose(-2, -1)), al) : Tensor(),
                                  n.needs_input_grad(2) ? scaled(av.transpose(-2, -1).matmul(g), al) : Tensor()};
                   });
  return out;
}

}  // namespace

Tensor addmm(const Tensor& input, const Tensor& m1, const Tensor& m2, Scalar beta, Scalar alpha) {
  MEMLENS_API_ENTRY();
  return add_product(input, m1, m2, beta, alpha, false);
}

Tensor baddbmm(const Tensor& input, const Tensor& b1, const Tensor& b2, Scalar beta, Scalar alpha) {
  MEMLENS_API_ENTRY();
  return add_product(input, b1, b2, beta, alpha, true);
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return a.matmul(b);
}
Tensor mm(const Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return a.mm(b);
}
Tensor bmm(const Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return a.bmm(b);
}

}  // namespace memlens
