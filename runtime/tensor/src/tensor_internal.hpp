#pragma once
// Helpers shared by the runtime's op files; not part of the public API.
#include <array>
#include <cstdint>
#include <string>

#include "gpu_kernels.hpp"
#include "memlens/tensor/autograd.hpp"
#include "memlens/tensor/half.hpp"
#include "memlens/tensor/instrument.hpp"
#include "memlens/tensor/tensor.hpp"

namespace memlens::detail {

Shape contiguous_strides(const Shape& sizes);
std::int64_t numel_of(const Shape& sizes);
// A fresh contiguous tensor on a resolved device.
Tensor make_tensor(const Shape& sizes, ScalarType dtype, const Device& resolved);
// A tensor sharing `base`'s storage with the given geometry, marked as a view of its
// root, and reported to the recorder as a view of that kind.
Tensor make_view(const Tensor& base, Shape sizes, Shape strides, std::int64_t offset, instrument::ViewKind kind);
// What the recorder is told (each does nothing when nobody records).
void emit_view(const Tensor& v, instrument::ViewKind kind);
void emit_copy(const Tensor& src, const Tensor& dst, instrument::CopyReason reason);
void emit_category(const Tensor& t, instrument::Category c);
// A contiguous copy made for layout, without autograd (BLAS operands, dtype casts).
Tensor layout_copy(const Tensor& t, instrument::CopyReason reason);
// clone() with the reason the copy is made (contiguous, reshape), with autograd.
Tensor clone_for(const Tensor& t, instrument::CopyReason reason);

// Times an op while recording and reports it, with its shapes, when done.
class OpTrace {
 public:
  OpTrace() : sink_(instrument::sink()), start_(sink_ ? sink_->now_ns() : 0) {}
  // `broadcasting`: an elementwise op whose inputs broadcast to the output's shape.
  void done(const char* name, std::initializer_list<const Tensor*> inputs, const Tensor& out, bool broadcasting = false) const {
    if (sink_) report(name, inputs, out, broadcasting);
  }

 private:
  void report(const char* name, std::initializer_list<const Tensor*> inputs, const Tensor& out, bool broadcasting) const;
  instrument::Sink* sink_;
  std::uint64_t start_;
};
// Same geometry trick without view bookkeeping: for kernels that read through
// broadcast strides.
Tensor as_strided_alias(const Tensor& t, Shape sizes, Shape strides, std::int64_t offset);
// `t` seen with `shape` through stride-0 dims (NumPy broadcasting), without autograd.
Tensor expand_alias(const Tensor& t, const Shape& shape);
// `t` converted to dtype (a copy when it differs), without autograd.
Tensor cast(const Tensor& t, ScalarType dtype);
// The one rule for where 16-bit floats round: PyTorch's kernels read them into float32,
// compute there, and round once, at the op's output. An op built from several steps does
// the same: it reads its 16-bit inputs with opmath() (float32; anything else as it is),
// computes, and stores its result with rounded(). Both are the op's own working memory,
// as registers are in PyTorch's kernels, not copies the program made: no copy event.
Tensor working_cast(const Tensor& t, ScalarType dtype);
inline Tensor opmath(const Tensor& t) { return t.defined() ? working_cast(t, opmath_type(t.dtype())) : t; }
inline Tensor rounded(const Tensor& t, ScalarType dtype) { return working_cast(t, dtype); }
template <class T>
T scalar_as(const Scalar& s) {
  if constexpr (is_floating_v<T>) return static_cast<T>(s.to_double());
  else return static_cast<T>(s.to_int());
}
// The scalar as a kernel of element type `t` reads it (gpu_kernels.hpp).
ScalarBits scalar_bits(const Scalar& s, ScalarType t);
// Wraps a possibly negative dim; throws IndexError naming the valid range.
std::int64_t wrap_dim(std::int64_t dim, std::int64_t ndim);
void check_same_device(const Tensor& a, const Tensor& b, const char* op);
void check_defined(const Tensor& t, const char* op);
// The dtype an op on a and b computes in (0-dim tensors do not widen the category).
ScalarType result_type(const Tensor& a, const Tensor& b);
ScalarType result_type(const Tensor& a, const Scalar& s);
// A [rows, cols] bool mask, true on and below (lower) or on and above the diagonal
// `diagonal` (column - row = diagonal): tril/triu and causal attention, filled directly
// rather than by a broadcast comparison.
Tensor triangle_mask(std::int64_t rows, std::int64_t cols, std::int64_t diagonal, bool lower, const Device& device);
// a @ b with PyTorch's batch broadcasting, the batch dims walked in place (no reshape, so
// no copy of a strided batch); the result's memory holds its dims in `memory_order`
// (a permutation of its dims; empty: contiguous), as attention kernels lay out [B, T, H, D].
// `unrounded`: a float32 result from 16-bit operands, for an op that adds to it first.
Tensor batched_matmul(const Tensor& a, const Tensor& b, const Shape& memory_order = {}, bool unrounded = false);
// A zero tensor of `shape` with values[at] added at the position index[at] names along
// dim d (gather's backward; max(dim)'s, to the index it returned).
Tensor scatter_add(const Shape& shape, std::int64_t d, const Tensor& index, const Tensor& values);
// index_select's gradient: zeros of `shape` with each slice k of grad along d added at
// slice idx[k] (idx int64, contiguous, in range). Embedding's backward shares it.
Tensor index_select_backward(const Shape& shape, std::int64_t d, const Tensor& idx, const Tensor& grad);
// Copies `src` into `dst` elementwise with dtype conversion; shapes must match after
// broadcasting `src` to `dst`. No autograd, no version bump. Across host and GPU a
// transfer; `non_blocking` lets one from or to pinned memory return before it is done.
void copy_into(const Tensor& dst, const Tensor& src, bool non_blocking = false);
// Writes op(self, other) into self, an in-place op. Without autograd it runs `raw` on
// self's storage; with autograd it computes the out-of-place result from a clone (so
// tensors saved by the op keep their version) and moves that history onto self, or onto
// self's base when self is a view (autograd::rebase_view).
template <class Raw, class OutOfPlace>
Tensor& write_in_place(Tensor& self, const Tensor* other, Raw&& raw, OutOfPlace&& out_of_place) {
  autograd::check_inplace(self);
  bool track = GradMode::is_enabled() && (self.requires_grad() || (other && other->requires_grad()));
  if (!track) {
    raw();
    self.storage()->bump_version();
    return self;
  }
  Tensor result = out_of_place(self.clone());
  if (result.dtype() != self.dtype()) result = result.to(self.dtype());  // computed wider (float32 into bf16): rounded once
  copy_into(self, result);
  self.storage()->bump_version();
  if (self.is_view()) autograd::rebase_view(self, result);
  else if (result.grad_fn()) self.unsafe_impl()->grad_fn = result.grad_fn();
  else autograd::record_overwrite(self, "CopyBackwards");  // constants written: history kept, gradient zero
  return self;
}

// A copy of t on device d (a transfer: host <-> GPU), without autograd or a copy event:
// for an op's own bookkeeping, such as index values read on the host.
Tensor transfer_copy(const Tensor& t, const Device& d);
// t with dim d first (the others in order), and t without dim d at storage offset 0: the
// two sides of GpuKernels::take and put along one dim.
Tensor dim_first(const Tensor& t, std::int64_t d);
Tensor without_dim(const Tensor& t, std::int64_t d);

// dst += src elementwise, src already of dst's shape, in place: no op, no tensor made
// (a gradient added row by row).
void accumulate_into(const Tensor& dst, const Tensor& src);
// Reads the element at `index` (one coordinate per dim) as double: for item() and printing.
double read_double(const Tensor& t, const Shape& index);

// Calls f(T{}) with T the C++ type of `t`.
template <class F>
decltype(auto) dispatch(ScalarType t, F&& f) {
  switch (t) {
    case kBool:
      return f(bool{});
    case kInt64:
      return f(std::int64_t{});
    case kFloat32:
      return f(float{});
    case kUInt8:
      return f(std::uint8_t{});
    case kInt32:
      return f(std::int32_t{});
    case kFloat16:
      return f(Half{});
    case kBFloat16:
      return f(BFloat16{});
    case kFloat64:
      break;
  }
  return f(double{});
}

// Visits every element of N operands that share `shape`, each with its own element
// strides. Dims of size 1 are dropped and adjacent dims merged where every operand is
// contiguous across them, so the inner loop is as long as possible.
// `inner(ptrs, byte_strides, n)` processes one run of n elements.
template <std::size_t N, class F>
void for_each_strided(const Shape& shape, std::array<char*, N> base, std::array<const Shape*, N> strides,
                      std::array<std::int64_t, N> elsize, F&& inner) {
  std::int64_t total = numel_of(shape);
  if (total == 0) return;
  Shape dims;
  std::vector<std::array<std::int64_t, N>> st;  // byte strides per kept dim, innermost last
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    std::array<std::int64_t, N> s{};
    for (std::size_t k = 0; k < N; ++k) s[k] = (*strides[k])[d] * elsize[k];
    if (!dims.empty()) {
      bool merge = true;
      for (std::size_t k = 0; k < N; ++k) merge = merge && st.back()[k] == s[k] * shape[d];
      if (merge) {
        dims.back() *= shape[d];
        st.back() = s;
        continue;
      }
    }
    dims.push_back(shape[d]);
    st.push_back(s);
  }
  if (dims.empty()) {
    std::array<std::int64_t, N> s{};
    inner(base, s, 1);
    return;
  }
  const std::size_t nd = dims.size();
  const std::int64_t run = dims[nd - 1];
  const auto run_strides = st[nd - 1];
  Shape counter(nd, 0);
  std::array<char*, N> p = base;
  while (true) {
    inner(p, run_strides, run);
    // Advance the outer counter (all dims but the innermost).
    std::size_t d = nd - 1;
    while (true) {
      if (d == 0) return;
      --d;
      ++counter[d];
      for (std::size_t k = 0; k < N; ++k) p[k] += st[d][k];
      if (counter[d] < dims[d]) break;
      for (std::size_t k = 0; k < N; ++k) p[k] -= st[d][k] * dims[d];
      counter[d] = 0;
    }
  }
}

inline char* data_bytes(const Tensor& t) { return static_cast<char*>(t.raw_data()); }

// out[i] = f(a[i]) over a's shape, a and out of the same shape; T in, R out.
template <class T, class R, class F>
void map_unary(const Tensor& out, const Tensor& a, F&& f) {
  for_each_strided<2>(out.sizes(), {data_bytes(out), data_bytes(a)}, {&out.strides(), &a.strides()},
                      {static_cast<std::int64_t>(sizeof(R)), static_cast<std::int64_t>(sizeof(T))},
                      [&](std::array<char*, 2> p, std::array<std::int64_t, 2> s, std::int64_t n) {
                        constexpr auto kR = static_cast<std::int64_t>(sizeof(R)), kT = static_cast<std::int64_t>(sizeof(T));
                        R* o = reinterpret_cast<R*>(p[0]);
                        const T* x = reinterpret_cast<const T*>(p[1]);
                        if (s[0] == kR && s[1] == kT) {  // dense runs: a loop the compiler vectorises
                          for (std::int64_t i = 0; i < n; ++i) o[i] = f(x[i]);
                          return;
                        }
                        for (std::int64_t i = 0; i < n; ++i)
                          *reinterpret_cast<R*>(p[0] + i * s[0]) = f(*reinterpret_cast<const T*>(p[1] + i * s[1]));
                      });
}

// out[i] = f(a[i], b[i]) with a, b already broadcast (stride 0) to out's shape.
template <class T, class R, class F>
void map_binary(const Tensor& out, const Tensor& a, const Tensor& b, F&& f) {
  for_each_strided<3>(
      out.sizes(), {data_bytes(out), data_bytes(a), data_bytes(b)}, {&out.strides(), &a.strides(), &b.strides()},
      {static_cast<std::int64_t>(sizeof(R)), static_cast<std::int64_t>(sizeof(T)), static_cast<std::int64_t>(sizeof(T))},
      [&](std::array<char*, 3> p, std::array<std::int64_t, 3> s, std::int64_t n) {
        constexpr auto kR = static_cast<std::int64_t>(sizeof(R)), kT = static_cast<std::int64_t>(sizeof(T));
        R* o = reinterpret_cast<R*>(p[0]);
        const T* x = reinterpret_cast<const T*>(p[1]);
        const T* y = reinterpret_cast<const T*>(p[2]);
        // Dense runs, and runs against one broadcast value, as plain loops the
        // compiler vectorises.
        if (s[0] == kR && s[1] == kT) {
          if (s[2] == kT) {
            for (std::int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
            return;
          }
          if (s[2] == 0) {
            const T v = *y;
            for (std::int64_t i = 0; i < n; ++i) o[i] = f(x[i], v);
            return;
          }
        }
        if (s[0] == kR && s[1] == 0 && s[2] == kT) {
          const T u = *x;
          for (std::int64_t i = 0; i < n; ++i) o[i] = f(u, y[i]);
          return;
        }
        for (std::int64_t i = 0; i < n; ++i)
          *reinterpret_cast<R*>(p[0] + i * s[0]) =
              f(*reinterpret_cast<const T*>(p[1] + i * s[1]), *reinterpret_cast<const T*>(p[2] + i * s[2]));
      });
}

}  // namespace memlens::detail
