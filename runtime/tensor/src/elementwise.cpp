// Elementwise math with broadcasting through stride 0, its in-place forms and gradients.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "autocast.hpp"
#include "tensor_internal.hpp"

namespace memlens {

using namespace detail;
using autograd::Node;
using autograd::SavedTensor;
using autograd::sum_to;
using Grads = std::vector<Tensor>;

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  std::size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    std::int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw ShapeError("The size of tensor a (" + std::to_string(da) + ") must match the size of tensor b (" +
                       std::to_string(db) + ") at non-singleton dimension " + std::to_string(i));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

namespace {

// The output is bool for comparisons and logic (fn::gives_bool), else the compute type.
template <class F>
Tensor binary_kernel(const Tensor& a, const Tensor& b, ScalarType compute, const char* op, F f) {
  constexpr bool kBoolOut = fn::gives_bool(F::id);
  check_same_device(a, b, op);
  OpTrace trace;
  Shape shape = broadcast_shapes(a.sizes(), b.sizes());
  Tensor x = expand_alias(cast(a, compute), shape), y = expand_alias(cast(b, compute), shape);
  Tensor out = make_tensor(shape, kBoolOut ? kBool : compute, a.device());
  if (on_gpu(out)) gpu().binary(F::id, fn::params_of(f), out, x, y);
  else
    dispatch(compute, [&](auto tag) {
      using T = decltype(tag);
      using R = std::conditional_t<kBoolOut, bool, T>;
      map_binary<T, R>(out, x, y, [&](T u, T v) { return static_cast<R>(f(u, v)); });
    });
  trace.done(op, {&a, &b}, out, /*broadcasting=*/true);
  return out;
}

// f(x, s), or f(s, x) with `scalar_first`, the scalar converted to the compute type.
template <class F>
Tensor scalar_kernel(const Tensor& a, const char* op, const Scalar& s, ScalarType compute, F f, bool scalar_first = false) {
  constexpr bool kBoolOut = fn::gives_bool(F::id);
  OpTrace trace;
  Tensor x = cast(a, compute);
  Tensor out = make_tensor(a.sizes(), kBoolOut ? kBool : compute, a.device());
  if (on_gpu(out)) gpu().binary_scalar(F::id, fn::params_of(f), out, x, scalar_bits(s, compute), scalar_first);
  else
    dispatch(compute, [&](auto tag) {
      using T = decltype(tag);
      using R = std::conditional_t<kBoolOut, bool, T>;
      T sv = scalar_as<T>(s);
      if (scalar_first) map_unary<T, R>(out, x, [&](T u) { return static_cast<R>(f(sv, u)); });
      else map_unary<T, R>(out, x, [&](T u) { return static_cast<R>(f(u, sv)); });
    });
  trace.done(op, {&a}, out);
  return out;
}

template <class F>
Tensor unary_kernel(const Tensor& a, const char* op, ScalarType compute, F f) {
  OpTrace trace;
  Tensor x = cast(a, compute);
  Tensor out = make_tensor(a.sizes(), compute, a.device());
  if (on_gpu(out)) gpu().unary(F::id, fn::params_of(f), out, x);
  else
    dispatch(compute, [&](auto tag) {
      using T = decltype(tag);
      map_unary<T, T>(out, x, [&](T u) { return static_cast<T>(f(u)); });
    });
  trace.done(op, {&a}, out);
  return out;
}

ScalarType floating(ScalarType t) { return is_floating_point(t) ? t : kFloat32; }

Tensor sign(const Tensor& a) { return unary_kernel(a, "sign", a.dtype(), fn::Sign{}); }

}  // namespace

namespace detail {
Tensor cast(const Tensor& t, ScalarType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out = make_tensor(t.sizes(), dtype, t.device());
  copy_into(out, t);
  emit_copy(t, out, instrument::CopyReason::Cast);
  return out;
}

Tensor working_cast(const Tensor& t, ScalarType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out = make_tensor(t.sizes(), dtype, t.device());
  copy_into(out, t);
  return out;
}
}  // namespace detail

// ---- arithmetic

Tensor Tensor::add(const Tensor& o, Scalar alpha) const {
  MEMLENS_API_ENTRY();
  ScalarType rt = result_type(*this, o);
  Tensor out = alpha.to_double() == 1.0 ? binary_kernel(*this, o, rt, "add", fn::Add{})
                                        : binary_kernel(*this, o, rt, "add", fn::AddScaled{{alpha.to_double()}});
  autograd::record(out, "AddBackward0", {*this, o},
                   [sa = sizes(), sb = o.sizes(), al = alpha.to_double()](const Tensor& g, const Node&) {
                     return Grads{sum_to(g, sa), sum_to(al == 1.0 ? g : g * al, sb)};
                   });
  return out;
}

Tensor Tensor::sub(const Tensor& o, Scalar alpha) const {
  MEMLENS_API_ENTRY();
  ScalarType rt = result_type(*this, o);
  if (rt == kBool)
    throw TypeError(
        "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator "
        "instead.");
  double al = alpha.to_double();
  Tensor out =
      al == 1.0 ? binary_kernel(*this, o, rt, "sub", fn::Sub{}) : binary_kernel(*this, o, rt, "sub", fn::SubScaled{{al}});
  autograd::record(out, "SubBackward0", {*this, o}, [sa = sizes(), sb = o.sizes(), al](const Tensor& g, const Node&) {
    return Grads{sum_to(g, sa), sum_to(g * (-al), sb)};
  });
  return out;
}

Tensor Tensor::mul(const Tensor& o) const {
  MEMLENS_API_ENTRY();
  Tensor out = binary_kernel(*this, o, result_type(*this, o), "mul", fn::Mul{});
  autograd::record(out, "MulBackward0", {*this, o},
                   [a = SavedTensor(*this), b = SavedTensor(o), sa = sizes(), sb = o.sizes()](const Tensor& g, const Node& n) {
                     return Grads{sum_to(g * b.unpack(n), sa), sum_to(g * a.unpack(n), sb)};
                   });
  return out;
}

Tensor Tensor::div(const Tensor& o) const {
  MEMLENS_API_ENTRY();
  Tensor out = binary_kernel(*this, o, floating(result_type(*this, o)), "div", fn::Div{});
  autograd::record(out, "DivBackward0", {*this, o},
                   [a = SavedTensor(*this), b = SavedTensor(o), sa = sizes(), sb = o.sizes()](const Tensor& g, const Node& n) {
                     Tensor bv = b.unpack(n);
                     return Grads{sum_to(g / bv, sa), sum_to(-g * a.unpack(n) / (bv * bv), sb)};
                   });
  return out;
}

Tensor Tensor::pow(const Tensor& e) const {
  MEMLENS_API_ENTRY();
  if (auto r = autocast::run(
          "pow", [](const Tensor& x, const Tensor& y) { return x.pow(y); }, *this, e))
    return *r;
  Tensor out = binary_kernel(*this, e, result_type(*this, e), "pow", fn::Pow{});
  autograd::record(out, "PowBackward1", {*this, e},
                   [a = SavedTensor(*this), ex = SavedTensor(e), r = SavedTensor(out, true), sa = sizes(), se = e.sizes()](
                       const Tensor& g, const Node& n) {
                     Tensor av = a.unpack(n), ev = ex.unpack(n);
                     return Grads{sum_to(g * ev * av.pow(ev - 1), sa), sum_to(g * r.unpack(n) * av.log(), se)};
                   });
  return out;
}

Tensor Tensor::add(Scalar o) const {
  MEMLENS_API_ENTRY();
  Tensor out = scalar_kernel(*this, "add", o, result_type(*this, o), fn::Add{});
  autograd::record(out, "AddBackward1", {*this}, [](const Tensor& g, const Node&) { return Grads{g}; });
  return out;
}

Tensor Tensor::sub(Scalar o) const {
  MEMLENS_API_ENTRY();
  Tensor out = scalar_kernel(*this, "sub", o, result_type(*this, o), fn::Sub{});
  autograd::record(out, "SubBackward1", {*this}, [](const Tensor& g, const Node&) { return Grads{g}; });
  return out;
}

Tensor Tensor::mul(Scalar o) const {
  MEMLENS_API_ENTRY();
  Tensor out = scalar_kernel(*this, "mul", o, result_type(*this, o), fn::Mul{});
  autograd::record(out, "MulBackward1", {*this}, [o](const Tensor& g, const Node&) { return Grads{g * o}; });
  return out;
}

Tensor Tensor::div(Scalar o) const {
  MEMLENS_API_ENTRY();
  Tensor out = scalar_kernel(*this, "div", o, floating(result_type(*this, o)), fn::Div{});
  autograd::record(out, "DivBackward1", {*this}, [o](const Tensor& g, const Node&) { return Grads{g / o}; });
  return out;
}

Tensor Tensor::pow(Scalar e) const {
  MEMLENS_API_ENTRY();
  if (auto r = autocast::run(
          "pow", [&](const Tensor& x) { return x.pow(e); }, *this))
    return *r;
  if (!memlens::is_floating_point(dtype()) && dtype() != kBool && e.is_integral() && e.to_double() < 0)
    throw Error("Integers to negative integer powers are not allowed.");
  Tensor out = scalar_kernel(*this, "pow", e, result_type(*this, e), fn::Pow{});
  autograd::record(out, "PowBackward0", {*this}, [a = SavedTensor(*this), e](const Tensor& g, const Node& n) {
    double ev = e.to_double();
    if (ev == 0) return Grads{zeros_like(g)};
    return Grads{g * ev * a.unpack(n).pow(ev - 1)};
  });
  return out;
}

// Scalar on the left: `2 * x`, `1 - x`, `1 / x`.
Tensor operator-(Scalar a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return b.neg().add(a);
}
// True division, as PyTorch's: 2 / arange(1, 4) is float ([2., 1., 0.6667]), never an
// integer power of -1.
Tensor operator/(Scalar a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  Tensor out = scalar_kernel(b, "div", a, floating(result_type(b, a)), fn::Div{}, /*scalar_first=*/true);
  autograd::record(out, "DivBackward0", {b}, [r = SavedTensor(out, true), bs = SavedTensor(b)](const Tensor& g, const Node& n) {
    return Grads{-g * r.unpack(n) / bs.unpack(n)};  // d(a/b)/db = -(a/b)/b
  });
  return out;
}

Tensor Tensor::neg() const {
  MEMLENS_API_ENTRY();
  if (dtype() == kBool)
    throw TypeError(
        "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or "
        "`logical_not()` operator instead.");
  Tensor out = unary_kernel(*this, "neg", dtype(), fn::Neg{});
  autograd::record(out, "NegBackward0", {*this}, [](const Tensor& g, const Node&) { return Grads{g.neg()}; });
  return out;
}

Tensor Tensor::exp() const {
  MEMLENS_API_ENTRY();
  if (auto r = autocast::run(
          "exp", [](const Tensor& x) { return x.exp(); }, *this))
    return *r;
  Tensor out = unary_kernel(*this, "exp", floating(dtype()), fn::Exp{});
  autograd::record(out, "ExpBackward0", {*this},
                   [r = SavedTensor(out, true)](const Tensor& g, const Node& n) { return Grads{g * r.unpack(n)}; });
  return out;
}

Tensor Tensor::log() const {
  MEMLENS_API_ENTRY();
  if (auto r = autocast::run(
          "log", [](const Tensor& x) { return x.log(); }, *this))
    return *r;
  Tensor out = unary_kernel(*this, "log", floating(dtype()), fn::Log{});
  autograd::record(out, "LogBackward0", {*this},
                   [a = SavedTensor(*this)](const Tensor& g, const Node& n) { return Grads{g / a.unpack(n)}; });
  return out;
}

Tensor Tensor::sqrt() const {
  MEMLENS_API_ENTRY();
  Tensor out = unary_kernel(*this, "sqrt", floating(dtype()), fn::Sqrt{});
  autograd::record(out, "SqrtBackward0", {*this},
                   [r = SavedTensor(out, true)](const Tensor& g, const Node& n) { return Grads{g / (r.unpack(n) * 2)}; });
  return out;
}

Tensor Tensor::abs() const {
  MEMLENS_API_ENTRY();
  Tensor out = unary_kernel(*this, "abs", dtype(), fn::Abs{});
  autograd::record(out, "AbsBackward0", {*this},
                   [a = SavedTensor(*this)](const Tensor& g, const Node& n) { return Grads{g * sign(a.unpack(n))}; });
  return out;
}

Tensor Tensor::relu() const {
  MEMLENS_API_ENTRY();
  Tensor out = unary_kernel(*this, "relu", dtype(), fn::Relu{});
  autograd::record(out, "ReluBackward0", {*this}, [r = SavedTensor(out, true)](const Tensor& g, const Node& n) {
    // One fused pass, as PyTorch's threshold_backward: no mask or cast tensors in between.
    return Grads{binary_kernel(g, r.unpack(n), g.dtype(), "threshold_backward", fn::ThresholdBackward{})};
  });
  return out;
}

Tensor Tensor::erf() const {
  MEMLENS_API_ENTRY();
  Tensor out = unary_kernel(*this, "erf", floating(dtype()), fn::Erf{});
  autograd::record(out, "ErfBackward0", {*this}, [x = SavedTensor(*this)](const Tensor& g, const Node& n) {
    Tensor xv = x.unpack(n);
    return Grads{g * ((xv * xv).neg().exp() * (2 / std::sqrt(std::numbers::pi)))};
  });
  return out;
}

Tensor Tensor::sin() const {
  MEMLENS_API_ENTRY();
  Tensor out = unary_kernel(*this, "sin", floating(dtype()), fn::Sin{});
  autograd::record(out, "SinBackward0", {*this},
                   [x = SavedTensor(*this)](const Tensor& g, const Node& n) { return Grads{g * x.unpack(n).cos()}; });
  return out;
}

Tensor Tensor::cos() const {
  MEMLENS_API_ENTRY();
  Tensor out = unary_kernel(*this, "cos", floating(dtype()), fn::Cos{});
  autograd::record(out, "CosBackward0", {*this},
                   [x = SavedTensor(*this)](const Tensor& g, const Node& n) { return Grads{g * x.unpack(n).sin().neg()}; });
  return out;
}

// Rounding is flat almost everywhere: its gradient is zero, as PyTorch's.
#define MEMLENS_ROUNDING(name, function, node)                                                               \
  Tensor Tensor::name() const {                                                                              \
    MEMLENS_API_ENTRY();                                                                                     \
    if (!is_floating_point()) return clone();                                                                \
    Tensor out = unary_kernel(*this, #name, dtype(), fn::function{});                                        \
    autograd::record(out, node, {*this}, [](const Tensor& g, const Node&) { return Grads{zeros_like(g)}; }); \
    return out;                                                                                              \
  }
MEMLENS_ROUNDING(floor, Floor, "FloorBackward0")
MEMLENS_ROUNDING(ceil, Ceil, "CeilBackward0")
MEMLENS_ROUNDING(round, Round, "RoundBackward0")  // half to even, as PyTorch's
#undef MEMLENS_ROUNDING

Tensor Tensor::isnan() const {
  MEMLENS_API_ENTRY();
  return ne(*this);
}
Tensor Tensor::logical_not() const {
  MEMLENS_API_ENTRY();
  return eq(0);
}

Tensor Tensor::sigmoid() const {
  MEMLENS_API_ENTRY();
  Tensor out = unary_kernel(*this, "sigmoid", floating(dtype()), fn::Sigmoid{});
  autograd::record(out, "SigmoidBackward0", {*this}, [r = SavedTensor(out, true)](const Tensor& g, const Node& n) {
    Tensor rv = r.unpack(n);
    return Grads{g * rv * (1 - rv)};
  });
  return out;
}

Tensor Tensor::tanh() const {
  MEMLENS_API_ENTRY();
  Tensor out = unary_kernel(*this, "tanh", floating(dtype()), fn::Tanh{});
  autograd::record(out, "TanhBackward0", {*this}, [r = SavedTensor(out, true)](const Tensor& g, const Node& n) {
    Tensor rv = r.unpack(n);
    return Grads{g * (1 - rv * rv)};
  });
  return out;
}

Tensor Tensor::clamp(std::optional<Scalar> lo, std::optional<Scalar> hi) const {
  MEMLENS_API_ENTRY();
  if (!lo && !hi) throw Error("torch.clamp: At least one of 'min' or 'max' must not be None");
  double l = lo ? lo->to_double() : -INFINITY, h = hi ? hi->to_double() : INFINITY;
  Tensor out = unary_kernel(*this, "clamp", dtype(), fn::Clamp{{l, h}});
  autograd::record(out, "ClampBackward1", {*this}, [a = SavedTensor(*this), l, h](const Tensor& g, const Node& n) {
    Tensor av = a.unpack(n);
    return Grads{g * (av.ge(l).to(g.dtype()) * av.le(h).to(g.dtype()))};
  });
  return out;
}

// ---- comparisons (never differentiable)

#define MEMLENS_COMPARISON(name, function)                                        \
  Tensor Tensor::name(const Tensor& o) const {                                    \
    MEMLENS_API_ENTRY();                                                          \
    return binary_kernel(*this, o, result_type(*this, o), #name, fn::function{}); \
  }                                                                               \
  Tensor Tensor::name(Scalar o) const {                                           \
    MEMLENS_API_ENTRY();                                                          \
    return scalar_kernel(*this, #name, o, result_type(*this, o), fn::function{}); \
  }
MEMLENS_COMPARISON(eq, Eq)
MEMLENS_COMPARISON(ne, Ne)
MEMLENS_COMPARISON(lt, Lt)
MEMLENS_COMPARISON(le, Le)
MEMLENS_COMPARISON(gt, Gt)
MEMLENS_COMPARISON(ge, Ge)
#undef MEMLENS_COMPARISON

// Selects, never multiplies: where(x > 0, x.log(), 0) is 0 where x <= 0, not NaN.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  if (cond.dtype() != kBool)
    throw TypeError("where expected condition to be a boolean tensor, but got a tensor with dtype " +
                    std::string(type_name(cond.dtype())));
  check_same_device(cond, a, "where");
  check_same_device(a, b, "where");
  OpTrace trace;
  ScalarType type = promote_types(a.dtype(), b.dtype());
  Shape shape = broadcast_shapes(broadcast_shapes(cond.sizes(), a.sizes()), b.sizes());
  Tensor c = expand_alias(cond, shape), x = expand_alias(cast(a, type), shape), y = expand_alias(cast(b, type), shape);
  Tensor out = make_tensor(shape, type, a.device());
  if (on_gpu(out)) gpu().where(out, c, x, y);
  else
    dispatch(type, [&](auto tag) {
      using T = decltype(tag);
      for_each_strided<4>(out.sizes(), {data_bytes(out), data_bytes(c), data_bytes(x), data_bytes(y)},
                          {&out.strides(), &c.strides(), &x.strides(), &y.strides()},
                          {static_cast<std::int64_t>(sizeof(T)), static_cast<std::int64_t>(sizeof(bool)),
                           static_cast<std::int64_t>(sizeof(T)), static_cast<std::int64_t>(sizeof(T))},
                          [](std::array<char*, 4> p, std::array<std::int64_t, 4> s, std::int64_t n) {
                            for (std::int64_t i = 0; i < n; ++i)
                              *reinterpret_cast<T*>(p[0] + i * s[0]) = *reinterpret_cast<const bool*>(p[1] + i * s[1])
                                                                           ? *reinterpret_cast<const T*>(p[2] + i * s[2])
                                                                           : *reinterpret_cast<const T*>(p[3] + i * s[3]);
                          });
    });
  trace.done("where", {&cond, &a, &b}, out, /*broadcasting=*/true);
  autograd::record(out, "WhereBackward0", {a, b}, [cond, sa = a.sizes(), sb = b.sizes()](const Tensor& g, const Node& n) {
    Tensor zero = zeros({}, TensorOptions().dtype(g.dtype()).device(g.device()));
    return Grads{n.needs_input_grad(0) ? sum_to(where(cond, g, zero), sa) : Tensor(),
                 n.needs_input_grad(1) ? sum_to(where(cond, zero, g), sb) : Tensor()};
  });
  return out;
}

namespace {
// maximum / minimum: NaN wins; where the inputs tie, each gets half the gradient (PyTorch's rule).
Tensor extreme_of(const Tensor& a, const Tensor& b, bool want_max, const char* op, const char* node) {
  Tensor out = want_max ? binary_kernel(a, b, result_type(a, b), op, fn::Maximum{})
                        : binary_kernel(a, b, result_type(a, b), op, fn::Minimum{});
  autograd::record(out, node, {a, b}, [sa = SavedTensor(a), sb = SavedTensor(b), want_max](const Tensor& g, const Node& n) {
    Tensor av = sa.unpack(n), bv = sb.unpack(n);
    Tensor to_a = (want_max ? av.gt(bv) : av.lt(bv)).to(g.dtype()) + av.eq(bv).to(g.dtype()) * 0.5;
    return Grads{n.needs_input_grad(0) ? sum_to(g * to_a, av.sizes()) : Tensor(),
                 n.needs_input_grad(1) ? sum_to(g * (1 - to_a), bv.sizes()) : Tensor()};
  });
  return out;
}
}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return extreme_of(a, b, true, "maximum", "MaximumBackward0");
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return extreme_of(a, b, false, "minimum", "MinimumBackward0");
}

Tensor logical_and(const Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return binary_kernel(a, b, promote_types(a.dtype(), b.dtype()), "logical_and", fn::LogicalAnd{});
}

Tensor logical_or(const Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return binary_kernel(a, b, promote_types(a.dtype(), b.dtype()), "logical_or", fn::LogicalOr{});
}

Tensor Tensor::masked_fill(const Tensor& mask, Scalar value) const {
  MEMLENS_API_ENTRY();
  if (mask.dtype() != kBool)
    throw TypeError("masked_fill_ only supports boolean masks, but got mask with dtype " + std::string(type_name(mask.dtype())));
  Shape shape = broadcast_shapes(sizes(), mask.sizes());
  if (shape != sizes())
    throw ShapeError("The size of the mask " + shape_str(mask.sizes()) + " must broadcast to the size of the tensor " +
                     shape_str(sizes()));
  return where(mask, scalar_tensor(value, TensorOptions().dtype(dtype()).device(device())), *this);
}

namespace detail {
Tensor triangle_mask(std::int64_t rows, std::int64_t cols, std::int64_t diagonal, bool lower, const Device& device) {
  OpTrace trace;
  Tensor keep = make_tensor({rows, cols}, kBool, device);
  if (on_gpu(keep)) {
    gpu().triangle(keep, diagonal, lower);
  } else {
    bool* p = keep.data_ptr<bool>();
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) p[i * cols + j] = lower ? j - i <= diagonal : j - i >= diagonal;
  }
  trace.done(lower ? "tril_mask" : "triu_mask", {}, keep);
  return keep;
}
}  // namespace detail

namespace {
Tensor triangle(const Tensor& a, std::int64_t diagonal, bool lower, const char* op) {
  if (a.dim() < 2) throw ShapeError(std::string(op) + ": input tensor must have at least 2 dimensions");
  Tensor keep = triangle_mask(a.size(-2), a.size(-1), diagonal, lower, a.device());
  return where(keep, a, scalar_tensor(0, TensorOptions().dtype(a.dtype()).device(a.device())));
}
}  // namespace

Tensor tril(const Tensor& a, std::int64_t diagonal) {
  MEMLENS_API_ENTRY();
  return triangle(a, diagonal, true, "tril");
}

Tensor triu(const Tensor& a, std::int64_t diagonal) {
  MEMLENS_API_ENTRY();
  return triangle(a, diagonal, false, "triu");
}

// ---- in-place

namespace {

template <class F>
void raw_binary(Tensor& self, const Tensor& other, const char* op, F f) {
  check_same_device(self, other, op);
  ScalarType rt = promote_types(self.dtype(), other.dtype());
  if (!can_cast(rt, self.dtype()))
    throw TypeError(std::string("result type ") + std::string(type_name(rt)) + " can't be cast to the desired output type " +
                    std::string(type_name(self.dtype())) + " in " + op);
  Shape shape = broadcast_shapes(self.sizes(), other.sizes());
  if (shape != self.sizes())
    throw ShapeError("output with shape " + shape_str(self.sizes()) + " doesn't match the broadcast shape " + shape_str(shape));
  if (rt != self.dtype()) {
    // A wider operand (a float32 update into bf16 weights): computed in the wider type and
    // rounded once into self, as PyTorch.
    Tensor wide = working_cast(self, rt);
    raw_binary(wide, other, op, f);
    copy_into(self, wide);
    return;
  }
  Tensor y = expand_alias(cast(other, self.dtype()), shape);
  if (on_gpu(self)) return gpu().binary(F::id, fn::params_of(f), self, self, y);
  dispatch(self.dtype(), [&](auto tag) {
    using T = decltype(tag);
    map_binary<T, T>(self, self, y, [&](T u, T v) { return static_cast<T>(f(u, v)); });
  });
}

template <class F>
void raw_scalar(Tensor& self, const Scalar& s, const char* op, F f) {
  if (s.is_floating_point() && !self.is_floating_point())
    throw TypeError(std::string("result type float can't be cast to the desired output type ") +
                    std::string(type_name(self.dtype())) + " in " + op);
  if (on_gpu(self)) return gpu().binary_scalar(F::id, fn::params_of(f), self, self, scalar_bits(s, self.dtype()), false);
  dispatch(self.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T sv = scalar_as<T>(s);
    map_unary<T, T>(self, self, [&](T u) { return static_cast<T>(f(u, sv)); });
  });
}

}  // namespace

Tensor& Tensor::add_(const Tensor& o, Scalar alpha) {
  MEMLENS_API_ENTRY();
  double al = alpha.to_double();
  return write_in_place(
      *this, &o,
      [&] {
        if (al == 1.0) raw_binary(*this, o, "add_", fn::Add{});
        else raw_binary(*this, o, "add_", fn::AddScaled{{al}});
      },
      [&](const Tensor& c) { return c.add(o, alpha); });
}
Tensor& Tensor::sub_(const Tensor& o, Scalar alpha) {
  MEMLENS_API_ENTRY();
  double al = alpha.to_double();
  return write_in_place(
      *this, &o,
      [&] {
        if (al == 1.0) raw_binary(*this, o, "sub_", fn::Sub{});
        else raw_binary(*this, o, "sub_", fn::SubScaled{{al}});
      },
      [&](const Tensor& c) { return c.sub(o, alpha); });
}
Tensor& Tensor::mul_(const Tensor& o) {
  MEMLENS_API_ENTRY();
  return write_in_place(
      *this, &o, [&] { raw_binary(*this, o, "mul_", fn::Mul{}); }, [&](const Tensor& c) { return c.mul(o); });
}
Tensor& Tensor::div_(const Tensor& o) {
  MEMLENS_API_ENTRY();
  if (!is_floating_point())
    throw TypeError("result type float can't be cast to the desired output type " + std::string(type_name(dtype())) + " in div_");
  return write_in_place(
      *this, &o, [&] { raw_binary(*this, o, "div_", fn::Div{}); }, [&](const Tensor& c) { return c.div(o); });
}
Tensor& Tensor::add_(Scalar s) {
  MEMLENS_API_ENTRY();
  return write_in_place(
      *this, nullptr, [&] { raw_scalar(*this, s, "add_", fn::Add{}); }, [&](const Tensor& c) { return c.add(s); });
}
Tensor& Tensor::sub_(Scalar s) {
  MEMLENS_API_ENTRY();
  return write_in_place(
      *this, nullptr, [&] { raw_scalar(*this, s, "sub_", fn::Sub{}); }, [&](const Tensor& c) { return c.sub(s); });
}
Tensor& Tensor::mul_(Scalar s) {
  MEMLENS_API_ENTRY();
  return write_in_place(
      *this, nullptr, [&] { raw_scalar(*this, s, "mul_", fn::Mul{}); }, [&](const Tensor& c) { return c.mul(s); });
}
Tensor& Tensor::div_(Scalar s) {
  MEMLENS_API_ENTRY();
  if (!is_floating_point())
    throw TypeError("result type float can't be cast to the desired output type " + std::string(type_name(dtype())) + " in div_");
  return write_in_place(
      *this, nullptr, [&] { raw_scalar(*this, s, "div_", fn::Div{}); }, [&](const Tensor& c) { return c.div(s); });
}
Tensor& Tensor::clamp_(std::optional<Scalar> lo, std::optional<Scalar> hi) {
  MEMLENS_API_ENTRY();
  return write_in_place(
      *this, nullptr,
      [&] {
        Tensor r = clamp(lo, hi);
        copy_into(*this, r);
      },
      [&](const Tensor& c) { return c.clamp(lo, hi); });
}
Tensor& Tensor::fill_(Scalar v) {
  MEMLENS_API_ENTRY();
  autograd::check_inplace(*this);
  // Written without reading: the storage may still be uninitialised.
  if (on_gpu(*this)) gpu().fill(*this, scalar_bits(v, dtype()));
  else
    dispatch(dtype(), [&](auto tag) {
      using T = decltype(tag);
      T sv = scalar_as<T>(v);
      for_each_strided<1>(sizes(), {data_bytes(*this)}, {&strides()}, {static_cast<std::int64_t>(sizeof(T))},
                          [sv](std::array<char*, 1> p, std::array<std::int64_t, 1> st, std::int64_t n) {
                            if (st[0] == static_cast<std::int64_t>(sizeof(T))) std::fill_n(reinterpret_cast<T*>(p[0]), n, sv);
                            else
                              for (std::int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p[0] + i * st[0]) = sv;
                          });
    });
  storage()->bump_version();
  autograd::record_overwrite(*this, "FillBackward0");
  return *this;
}
Tensor& Tensor::zero_() {
  MEMLENS_API_ENTRY();
  return fill_(0);
}

Tensor& Tensor::copy_(const Tensor& src) {
  MEMLENS_API_ENTRY();
  check_defined(src, "copy_");
  return write_in_place(
      *this, &src,
      [&] {
        copy_into(*this, src);
        emit_copy(src, *this, instrument::CopyReason::Copy);
      },
      [&](const Tensor&) { return src.to(device()).to(dtype()).expand(sizes()).clone(); });
}

}  // namespace memlens
