#pragma once
// Tensor: a strided view of a shared Storage, with dtype, device, version counter and
// autograd metadata. The handle is cheap to copy (it shares the TensorImpl), as in libtorch.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "memlens/allocator/device.hpp"
#include "memlens/tensor/dtype.hpp"
#include "memlens/tensor/errors.hpp"
#include "memlens/tensor/half.hpp"
#include "memlens/tensor/scalar.hpp"
#include "memlens/tensor/storage.hpp"
#include "memlens/tensor/tensor_options.hpp"

namespace memlens {

namespace autograd {
class Node;
}

struct TensorImpl {
  std::shared_ptr<StorageImpl> storage;
  Shape sizes;
  Shape strides;            // in elements
  std::int64_t offset = 0;  // in elements
  ScalarType dtype = kFloat32;
  std::uint64_t id = 0;

  // autograd
  bool requires_grad = false;  // set on leaves only; non-leaves have grad_fn
  std::shared_ptr<TensorImpl> grad;
  std::shared_ptr<autograd::Node> grad_fn;
  std::weak_ptr<autograd::Node> grad_accumulator;
  // Root tensor this one is a view of (null for a base). Used for the leaf-view rule.
  std::shared_ptr<TensorImpl> view_base;
  // The base's grad_fn when this view's history was made. When the base's history is
  // replaced since (an in-place op on it or on another of its views), this view's is
  // rebuilt from the base's, as PyTorch regenerates a view's grad_fn. A raw pointer is
  // enough: the base's new history keeps its old one alive.
  const autograd::Node* base_history = nullptr;
};

namespace indexing {
struct Slice {
  Slice(std::optional<std::int64_t> start = std::nullopt, std::optional<std::int64_t> stop = std::nullopt, std::int64_t step = 1)
      : start(start), stop(stop), step(step) {}
  std::optional<std::int64_t> start, stop;
  std::int64_t step;
};
struct EllipsisIndexType {};
inline constexpr EllipsisIndexType Ellipsis{};
inline constexpr std::nullopt_t None = std::nullopt;
}  // namespace indexing

class Tensor;
// One item of `t.index({...})`: an integer, a Slice, None (new axis), Ellipsis, or a
// tensor (int64 indices along that dim, or a bool mask).
class TensorIndex {
 public:
  TensorIndex(std::int64_t i) : v_(i) {}
  TensorIndex(int i) : v_(static_cast<std::int64_t>(i)) {}
  TensorIndex(indexing::Slice s) : v_(s) {}
  TensorIndex(std::nullopt_t) : v_(std::nullopt) {}
  TensorIndex(indexing::EllipsisIndexType e) : v_(e) {}
  TensorIndex(const Tensor& t);
  using Value =
      std::variant<std::int64_t, indexing::Slice, std::nullopt_t, indexing::EllipsisIndexType, std::shared_ptr<TensorImpl>>;
  const Value& value() const { return v_; }

 private:
  Value v_;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  Tensor(const Tensor&) = default;
  Tensor(Tensor&&) noexcept = default;
  // Handle assignment on named tensors; on temporaries (`a[0][0] = x`) it writes data.
  Tensor& operator=(const Tensor&) & = default;
  Tensor& operator=(Tensor&&) & noexcept = default;
  Tensor& operator=(const Tensor& src) &&;
  Tensor& operator=(Tensor&& src) &&;
  Tensor& operator=(Scalar v) &&;

  // --- metadata
  bool defined() const { return impl_ != nullptr; }
  const Shape& sizes() const;
  const Shape& strides() const;
  std::int64_t size(std::int64_t dim) const;
  std::int64_t stride(std::int64_t dim) const;
  std::int64_t dim() const { return static_cast<std::int64_t>(sizes().size()); }
  std::int64_t numel() const;
  std::int64_t storage_offset() const;
  ScalarType dtype() const;
  ScalarType scalar_type() const { return dtype(); }
  std::size_t element_size() const;
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * element_size(); }
  Device device() const;
  bool is_contiguous() const;
  bool is_floating_point() const;
  std::uint64_t id() const;
  const std::shared_ptr<StorageImpl>& storage() const;
  bool is_view() const;
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  std::uint32_t _version() const;
  // Marks the storage as used by work on stream `s` (PyTorch's Tensor.record_stream).
  void record_stream(StreamId s) const { storage()->record_stream(s); }
  TensorImpl* unsafe_impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  // --- raw data
  template <class T>
  T* data_ptr() const;
  void* raw_data() const;  // address of element 0
  // The single value of a one-element tensor.
  Scalar item() const;
  template <class T>
  T item() const;
  std::string toString() const;  // PyTorch-style repr

  // --- devices and types
  Tensor to(const Device& d) const;
  // PyTorch's non_blocking: the copy may overlap host work when the source is pinned.
  Tensor to(const Device& d, bool non_blocking) const;
  Tensor to(ScalarType t) const;
  Tensor cpu() const;
  Tensor cuda() const;
  Tensor clone() const;
  // A copy in pinned (page-locked) host memory, the device `cuda_host` of a trace; the
  // tensor itself stays a CPU tensor. Pinned blocks are cached by the host allocator
  // (host_empty_cache returns them).
  Tensor pin_memory() const;
  bool is_pinned() const;
  Tensor contiguous() const;

  // --- views (share storage)
  Tensor view(Shape shape) const;
  Tensor reshape(Shape shape) const;
  Tensor transpose(std::int64_t d0, std::int64_t d1) const;
  Tensor t() const;
  Tensor permute(Shape dims) const;
  Tensor expand(Shape sizes) const;
  Tensor expand_as(const Tensor& other) const;
  Tensor squeeze() const;
  Tensor squeeze(std::int64_t dim) const;
  Tensor unsqueeze(std::int64_t dim) const;
  Tensor flatten(std::int64_t start_dim = 0, std::int64_t end_dim = -1) const;
  Tensor narrow(std::int64_t dim, std::int64_t start, std::int64_t length) const;
  Tensor select(std::int64_t dim, std::int64_t index) const;
  Tensor slice(std::int64_t dim, std::optional<std::int64_t> start = std::nullopt, std::optional<std::int64_t> end = std::nullopt,
               std::int64_t step = 1) const;
  Tensor diagonal(std::int64_t offset = 0, std::int64_t d0 = 0, std::int64_t d1 = 1) const;
  Tensor detach() const;
  Tensor index(std::initializer_list<TensorIndex> idx) const;
  Tensor index(const std::vector<TensorIndex>& idx) const;
  Tensor operator[](std::int64_t i) const { return select(0, i); }
  Tensor operator[](const Tensor& idx) const;

  // --- indexing ops (copy)
  Tensor index_select(std::int64_t dim, const Tensor& index) const;
  // out[i][j] = self[i][index[i][j]] for dim 1 (PyTorch's gather): index has self's
  // number of dims and is no larger in the others. One pass over raw memory each way, so
  // a loss that picks one logit per row costs one small tensor, not a row of ops.
  Tensor gather(std::int64_t dim, const Tensor& index) const;
  Tensor masked_select(const Tensor& mask) const;
  // A copy with src's values written where index points along dim (gather's inverse; a
  // position written twice keeps one of them).
  Tensor scatter(std::int64_t dim, const Tensor& index, const Tensor& src) const;
  // scatter, adding src's values into self's instead of writing them (repeated indices sum).
  Tensor scatter_add(std::int64_t dim, const Tensor& index, const Tensor& src) const;
  // A copy with alpha * source's slices added at the positions index lists along dim.
  Tensor index_add(std::int64_t dim, const Tensor& index, const Tensor& source, Scalar alpha = 1) const;
  // Writes value (broadcast to the indexed shape) where idx points; with tensor indices,
  // `accumulate` adds instead, summing repeated positions.
  Tensor& index_put_(const std::vector<TensorIndex>& idx, const Tensor& value, bool accumulate = false);
  Tensor& index_put_(const std::vector<TensorIndex>& idx, Scalar value);

  // --- elementwise
  Tensor add(const Tensor& o, Scalar alpha = 1) const;
  Tensor add(Scalar o) const;
  Tensor sub(const Tensor& o, Scalar alpha = 1) const;
  Tensor sub(Scalar o) const;
  Tensor mul(const Tensor& o) const;
  Tensor mul(Scalar o) const;
  Tensor div(const Tensor& o) const;
  Tensor div(Scalar o) const;
  Tensor pow(const Tensor& e) const;
  Tensor pow(Scalar e) const;
  Tensor neg() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor abs() const;
  Tensor relu() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  Tensor erf() const;
  Tensor sin() const;
  Tensor cos() const;
  // Rounding (gradient zero, as PyTorch's), NaN test and logic (bool results).
  Tensor floor() const;
  Tensor ceil() const;
  Tensor round() const;
  Tensor isnan() const;
  Tensor logical_not() const;
  // Pieces along a dim, as views: split into pieces of `size` (the last may be shorter),
  // chunk into `chunks` pieces of equal size (the last may be shorter), unbind into slices.
  std::vector<Tensor> split(std::int64_t size, std::int64_t dim = 0) const;
  // Pieces of the given sizes along dim, as views (PyTorch's split with a list); the sizes
  // must sum to the dim's size.
  std::vector<Tensor> split(const Shape& sizes, std::int64_t dim = 0) const;
  std::vector<Tensor> chunk(std::int64_t chunks, std::int64_t dim = 0) const;
  std::vector<Tensor> unbind(std::int64_t dim = 0) const;
  Tensor flip(Shape dims) const;
  Tensor roll(std::int64_t shift, std::int64_t dim) const;
  // Tiles the tensor repeats[i] times along dim i (a new tensor; expand is the view).
  Tensor repeat(Shape repeats) const;
  Tensor cumsum(std::int64_t dim) const;
  // Variance and standard deviation over dims, with Bessel's correction by default.
  Tensor var(Shape dims, bool unbiased = true, bool keepdim = false) const;
  Tensor std(Shape dims, bool unbiased = true, bool keepdim = false) const;
  // The p-norm over dims (all of them when empty): p = inf / -inf the largest / smallest
  // |x|, p = 0 the count of non-zeros.
  Tensor norm(double p = 2, Shape dims = {}, bool keepdim = false) const;
  Tensor logsumexp(Shape dims, bool keepdim = false) const;
  Tensor amax(Shape dims, bool keepdim = false) const;
  Tensor amin(Shape dims, bool keepdim = false) const;
  // Values and their int64 indices along dim (stable); topk keeps the k first.
  std::tuple<Tensor, Tensor> sort(std::int64_t dim = -1, bool descending = false) const;
  Tensor argsort(std::int64_t dim = -1, bool descending = false) const;
  std::tuple<Tensor, Tensor> topk(std::int64_t k, std::int64_t dim = -1, bool largest = true) const;
  // The coordinates of non-zero elements, [count, dim] int64.
  Tensor nonzero() const;
  Tensor dot(const Tensor& o) const;
  Tensor mv(const Tensor& v) const;
  // In-place random fills from the seeded generator.
  Tensor& uniform_(double from = 0, double to = 1);
  Tensor& normal_(double mean = 0, double std = 1);
  Tensor& bernoulli_(double p = 0.5);
  // PyTorch's masked_fill: value where mask (bool, broadcast to this tensor's shape) is true.
  Tensor masked_fill(const Tensor& mask, Scalar value) const;
  Tensor eq(const Tensor& o) const;
  Tensor eq(Scalar o) const;
  Tensor ne(const Tensor& o) const;
  Tensor ne(Scalar o) const;
  Tensor lt(const Tensor& o) const;
  Tensor lt(Scalar o) const;
  Tensor le(const Tensor& o) const;
  Tensor le(Scalar o) const;
  Tensor gt(const Tensor& o) const;
  Tensor gt(Scalar o) const;
  Tensor ge(const Tensor& o) const;
  Tensor ge(Scalar o) const;

  // --- in place (bump the version counter, allocate nothing)
  Tensor& add_(const Tensor& o, Scalar alpha = 1);
  Tensor& add_(Scalar o);
  Tensor& sub_(const Tensor& o, Scalar alpha = 1);
  Tensor& sub_(Scalar o);
  Tensor& mul_(const Tensor& o);
  Tensor& mul_(Scalar o);
  Tensor& div_(const Tensor& o);
  Tensor& div_(Scalar o);
  Tensor& copy_(const Tensor& src);
  Tensor& zero_();
  Tensor& fill_(Scalar v);
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;

  // --- reductions
  Tensor sum() const;
  Tensor sum(Shape dims, bool keepdim = false) const;
  // The product of all elements, or along one dim (int64 for integral inputs).
  Tensor prod() const;
  Tensor prod(std::int64_t dim, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(Shape dims, bool keepdim = false) const;
  Tensor max() const;
  std::tuple<Tensor, Tensor> max(std::int64_t dim, bool keepdim = false) const;
  Tensor min() const;
  std::tuple<Tensor, Tensor> min(std::int64_t dim, bool keepdim = false) const;
  Tensor argmax() const;
  Tensor argmax(std::int64_t dim, bool keepdim = false) const;
  Tensor argmin() const;
  Tensor argmin(std::int64_t dim, bool keepdim = false) const;

  // --- linear algebra
  Tensor matmul(const Tensor& o) const;
  Tensor mm(const Tensor& o) const;
  Tensor bmm(const Tensor& o) const;

  // --- autograd
  bool requires_grad() const;
  Tensor& requires_grad_(bool r = true);
  Tensor& set_requires_grad(bool r) { return requires_grad_(r); }
  bool is_leaf() const;
  Tensor grad() const;
  void set_grad(const Tensor& g);
  std::shared_ptr<autograd::Node> grad_fn() const;
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  // A non-leaf keeps its gradient in grad() after backward, as PyTorch's retain_grad();
  // a no-op on a leaf (which keeps its own) and on a tensor without grad_fn.
  void retain_grad() const;

 private:
  TensorImpl& impl() const;
  std::shared_ptr<TensorImpl> impl_;
};

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, Scalar b);
Tensor operator-(const Tensor& a, Scalar b);
Tensor operator*(const Tensor& a, Scalar b);
Tensor operator/(const Tensor& a, Scalar b);
Tensor operator+(Scalar a, const Tensor& b);
Tensor operator-(Scalar a, const Tensor& b);
Tensor operator*(Scalar a, const Tensor& b);
Tensor operator/(Scalar a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, Scalar b);
Tensor operator!=(const Tensor& a, Scalar b);
Tensor operator<(const Tensor& a, Scalar b);
Tensor operator<=(const Tensor& a, Scalar b);
Tensor operator>(const Tensor& a, Scalar b);
Tensor operator>=(const Tensor& a, Scalar b);
Tensor& operator+=(Tensor& a, const Tensor& b);
Tensor& operator-=(Tensor& a, const Tensor& b);
Tensor& operator*=(Tensor& a, const Tensor& b);
Tensor& operator/=(Tensor& a, const Tensor& b);
Tensor& operator+=(Tensor& a, Scalar b);
Tensor& operator-=(Tensor& a, Scalar b);
Tensor& operator*=(Tensor& a, Scalar b);
Tensor& operator/=(Tensor& a, Scalar b);
// `y += 1` where y is a temporary view (`x[0] += 1`) must still write through.
Tensor& operator+=(Tensor&& a, const Tensor& b);
Tensor& operator+=(Tensor&& a, Scalar b);
std::ostream& operator<<(std::ostream& os, const Tensor& t);

// --- free-function spellings
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, Scalar e);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor abs(const Tensor& a);
Tensor relu(const Tensor& a);
Tensor sigmoid(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor erf(const Tensor& a);
Tensor sin(const Tensor& a);
Tensor cos(const Tensor& a);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor stack(const std::vector<Tensor>& tensors, std::int64_t dim = 0);
// beta * input + alpha * (m1 @ m2), and its batched form.
Tensor addmm(const Tensor& input, const Tensor& m1, const Tensor& m2, Scalar beta = 1, Scalar alpha = 1);
Tensor baddbmm(const Tensor& input, const Tensor& b1, const Tensor& b2, Scalar beta = 1, Scalar alpha = 1);
Tensor linspace(double start, double end, std::int64_t steps, TensorOptions o = {});
Tensor randperm(std::int64_t n, TensorOptions o = kInt64);
// The lower (tril) or upper (triu) triangle of the last two dims, from `diagonal` on; the
// rest zero.
Tensor tril(const Tensor& a, std::int64_t diagonal = 0);
Tensor triu(const Tensor& a, std::int64_t diagonal = 0);
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor log_softmax(const Tensor& x, std::int64_t dim);
Tensor softmax(const Tensor& x, std::int64_t dim);
Tensor cat(const std::vector<Tensor>& tensors, std::int64_t dim = 0);
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);
bool equal(const Tensor& a, const Tensor& b);
// The shape two shapes broadcast to; throws ShapeError naming the mismatching dim.
Shape broadcast_shapes(const Shape& a, const Shape& b);
std::string shape_str(const Shape& s);  // "[2, 3]"

// --- creation
Tensor empty(Shape sizes, TensorOptions o = {});
Tensor zeros(Shape sizes, TensorOptions o = {});
Tensor ones(Shape sizes, TensorOptions o = {});
Tensor full(Shape sizes, Scalar value, TensorOptions o = {});
Tensor empty_like(const Tensor& t);
Tensor empty_like(const Tensor& t, TensorOptions o);
Tensor zeros_like(const Tensor& t);
Tensor zeros_like(const Tensor& t, TensorOptions o);
Tensor ones_like(const Tensor& t);
Tensor ones_like(const Tensor& t, TensorOptions o);
Tensor rand(Shape sizes, TensorOptions o = {});
Tensor randn(Shape sizes, TensorOptions o = {});
Tensor randint(std::int64_t low, std::int64_t high, Shape sizes, TensorOptions o = kInt64);
// Integral arguments give int64, any floating one gives float32 (PyTorch's rule).
Tensor arange(Scalar end, TensorOptions o = {});
Tensor arange(Scalar start, Scalar end, Scalar step = 1, TensorOptions o = {});
Tensor eye(std::int64_t n, TensorOptions o = {});
Tensor eye(std::int64_t n, std::int64_t m, TensorOptions o = {});
// A tensor holding the given values (float32 unless `o` says otherwise).
Tensor tensor(std::initializer_list<double> values, TensorOptions o = {});
Tensor tensor(const std::vector<double>& values, Shape sizes, TensorOptions o = {});
Tensor scalar_tensor(Scalar v, TensorOptions o = {});
void manual_seed(std::uint64_t seed);
// The generator's state behind rand/randn/randint (PyTorch's get_rng_state): set it back
// to draw the same numbers again, as activation checkpointing does for dropout.
struct RngState {
  std::string bytes;
};
RngState get_rng_state();
void set_rng_state(const RngState& state);

template <class T>
T Tensor::item() const {
  Scalar s = item();
  if constexpr (is_floating_v<T>) return static_cast<T>(s.to_double());
  else return static_cast<T>(s.to_int());
}

}  // namespace memlens
