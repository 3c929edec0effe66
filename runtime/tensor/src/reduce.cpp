// Reductions: sum and mean over any dims (accumulated in double), max/min/argmax/argmin
// over one dim or all.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "autocast.hpp"
#include "row_kernels.hpp"
#include "vector_clones.hpp"
#include "tensor_internal.hpp"

namespace memlens {

using namespace detail;
using autograd::Node;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

namespace {

std::vector<bool> reduced_mask(const Tensor& t, const Shape& dims) {
  std::vector<bool> mask(static_cast<std::size_t>(t.dim()), dims.empty());
  for (auto d : dims) {
    auto w = static_cast<std::size_t>(wrap_dim(d, t.dim()));
    if (t.dim() == 0) continue;
    if (mask[w]) throw ShapeError("dim " + std::to_string(w) + " appears multiple times in the list of dims");
    mask[w] = true;
  }
  return mask;
}

Shape reduced_shape(const Tensor& t, const std::vector<bool>& mask, bool keepdim) {
  Shape s;
  for (std::size_t i = 0; i < mask.size(); ++i) {
    if (!mask[i]) s.push_back(t.sizes()[i]);
    else if (keepdim) s.push_back(1);
  }
  return s;
}

// The keepdim-shaped view of a reduction result with stride 0 on reduced dims, so the
// input can be walked with the output as a second operand.
Tensor accumulator_view(const Tensor& acc_keepdim, const Tensor& input, const std::vector<bool>& mask) {
  Shape st = acc_keepdim.strides();
  for (std::size_t i = 0; i < mask.size(); ++i)
    if (mask[i]) st[i] = 0;
  return as_strided_alias(acc_keepdim, input.sizes(), st, acc_keepdim.storage_offset());
}

// A float32 sum of a contiguous tensor whose reduced dims are all leading or all
// trailing, into the double accumulator `acc`: blocks of at most kBlock elements are
// summed in float across vector lanes (as PyTorch's CPU sum does), and each block's sum
// is added in double, so the error stays that of a kBlock-element float sum. False when
// the dims are mixed (the general path folds those).
// The two float loops below are MEMLENS_VECTOR_CLONES (vector_clones.hpp).

// The sum of n consecutive floats (n at most a block), in four independent vectors of
// eight lanes so the adds overlap.
MEMLENS_VECTOR_CLONES float sum_block(const float* __restrict x, std::int64_t n) {
  typedef float Lanes __attribute__((vector_size(32)));
  Lanes acc[4] = {};
  std::int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; ++k) {
      Lanes v;
      std::memcpy(&v, x + i + 8 * k, sizeof v);
      acc[k] += v;
    }
  Lanes all = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  float block = 0;
  for (int k = 0; k < 8; ++k) block += all[k];
  for (; i < n; ++i) block += x[i];
  return block;
}

// partial[c] += the sum over n rows of x[r * cols + c].
MEMLENS_VECTOR_CLONES void sum_rows_into(float* __restrict partial, const float* __restrict x, std::int64_t n,
                                         std::int64_t cols) {
  for (std::int64_t r = 0; r < n; ++r) {
    const float* __restrict row = x + r * cols;
    for (std::int64_t c = 0; c < cols; ++c) partial[c] += row[c];
  }
}

bool sum_float_blocks(const Tensor& t, const std::vector<bool>& mask, const Tensor& acc) {
  constexpr std::int64_t kBlock = 256;
  std::size_t lead = 0;
  while (lead < mask.size() && mask[lead]) ++lead;
  std::size_t trail = 0;
  while (trail < mask.size() && mask[mask.size() - 1 - trail]) ++trail;
  auto none = [](auto from, auto to) { return std::none_of(from, to, [](bool b) { return b; }); };
  const bool trailing = trail > 0 && none(mask.begin(), mask.end() - static_cast<std::ptrdiff_t>(trail));
  const bool leading = !trailing && lead > 0 && none(mask.begin() + static_cast<std::ptrdiff_t>(lead), mask.end());
  if (!leading && !trailing) return false;
  std::int64_t reduced = 1;
  for (std::size_t i = 0; i < mask.size(); ++i)
    if (mask[i]) reduced *= t.sizes()[i];
  const std::int64_t kept = t.numel() / std::max<std::int64_t>(reduced, 1);
  const float* x = static_cast<const float*>(t.raw_data());
  double* out = static_cast<double*>(acc.raw_data());
  if (trailing) {  // each kept row sums `reduced` consecutive elements
    for (std::int64_t r = 0; r < kept; ++r) {
      const float* row = x + r * reduced;
      double total = 0;
      for (std::int64_t b = 0; b < reduced; b += kBlock) total += sum_block(row + b, std::min(kBlock, reduced - b));
      out[r] += total;
    }
    return true;
  }
  // leading: column c sums x[r * kept + c] over the reduced rows r, kBlock rows at a time
  std::vector<float> partial_buffer(static_cast<std::size_t>(kept));
  float* __restrict partial = partial_buffer.data();
  for (std::int64_t b = 0; b < reduced; b += kBlock) {
    std::fill_n(partial, kept, 0.0f);
    sum_rows_into(partial, x + b * kept, std::min(kBlock, reduced - b), kept);
    for (std::int64_t c = 0; c < kept; ++c) out[c] += partial[c];
  }
  return true;
}

// Folds the masked dims with + (or * for a product) into a double or int64 accumulator.
template <bool Product>
Tensor fold_impl(const Tensor& t, const std::vector<bool>& mask, bool keepdim, ScalarType out_type) {
  OpTrace trace;
  Shape keep = reduced_shape(t, mask, true);
  TensorOptions acc_options = TensorOptions(is_floating_point(out_type) ? kFloat64 : kInt64).device(t.device());
  Tensor acc = Product ? ones(keep, acc_options) : zeros(keep, acc_options);
  Tensor accv = accumulator_view(acc, t, mask);
  if (on_gpu(t)) {
    gpu().fold(acc, t, mask, Product);
  } else if (!Product && t.dtype() == kFloat32 && t.is_contiguous() && sum_float_blocks(t, mask, acc)) {
    // done by the blocked float path
  } else
    dispatch(t.dtype(), [&](auto tag) {
      using T = decltype(tag);
      dispatch(acc.dtype(), [&](auto atag) {
        using A = decltype(atag);
        auto fold = [](A a, T x) { return Product ? a * static_cast<A>(x) : a + static_cast<A>(x); };
        for_each_strided<2>(t.sizes(), {data_bytes(accv), data_bytes(t)}, {&accv.strides(), &t.strides()},
                            {static_cast<std::int64_t>(sizeof(A)), static_cast<std::int64_t>(sizeof(T))},
                            [&fold](std::array<char*, 2> p, std::array<std::int64_t, 2> s, std::int64_t n) {
                              constexpr auto kA = static_cast<std::int64_t>(sizeof(A)), kT = static_cast<std::int64_t>(sizeof(T));
                              A* acc = reinterpret_cast<A*>(p[0]);
                              const T* x = reinterpret_cast<const T*>(p[1]);
                              if (s[0] == 0 && s[1] == kT) {
                                // Along a dense run: eight independent partial folds, so the adds
                                // overlap instead of waiting on each other, and vectorise.
                                constexpr std::int64_t kLanes = 8;
                                A lane[kLanes];
                                for (auto& l : lane) l = Product ? A(1) : A(0);
                                std::int64_t i = 0;
                                for (; i + kLanes <= n; i += kLanes)
                                  for (std::int64_t k = 0; k < kLanes; ++k) lane[k] = fold(lane[k], x[i + k]);
                                A a = *acc;
                                for (auto l : lane) a = Product ? a * l : a + l;
                                for (; i < n; ++i) a = fold(a, x[i]);
                                *acc = a;
                              } else if (s[0] == 0) {  // along a strided run: keep the value in a register
                                A a = *acc;
                                for (std::int64_t i = 0; i < n; ++i) a = fold(a, *reinterpret_cast<const T*>(p[1] + i * s[1]));
                                *acc = a;
                              } else if (s[0] == kA && s[1] == kT) {  // across rows: one fold per column, vectorised
                                for (std::int64_t i = 0; i < n; ++i) acc[i] = fold(acc[i], x[i]);
                              } else {
                                for (std::int64_t i = 0; i < n; ++i) {
                                  A& a = *reinterpret_cast<A*>(p[0] + i * s[0]);
                                  a = fold(a, *reinterpret_cast<const T*>(p[1] + i * s[1]));
                                }
                              }
                            });
      });
    });
  Tensor out = cast(acc, out_type);
  Shape final_shape = reduced_shape(t, mask, keepdim);
  Tensor result = as_strided_alias(out, final_shape, contiguous_strides(final_shape), 0);
  trace.done(Product ? "prod" : "sum", {&t}, result);
  return result;
}

Tensor sum_impl(const Tensor& t, const std::vector<bool>& mask, bool keepdim, ScalarType out_type) {
  return fold_impl<false>(t, mask, keepdim, out_type);
}

// Gradient of a reduction: grad broadcast back over the reduced dims.
Tensor expand_reduced(const Tensor& g, const Shape& in, const std::vector<bool>& mask, bool keepdim) {
  Tensor gk = g;
  if (!keepdim)
    for (std::size_t i = 0; i < mask.size(); ++i)
      if (mask[i]) gk = gk.unsqueeze(static_cast<std::int64_t>(i));
  return gk.expand(in);
}

// Along one dim: the extreme value and its first index. The op's event names the one the
// caller returns (argmax's indices, max's values).
std::tuple<Tensor, Tensor> extreme(const Tensor& t, std::optional<std::int64_t> dim_opt, bool keepdim, bool want_max,
                                   const char* name, bool returns_indices = false) {
  if (t.numel() == 0) throw IndexError(std::string(name) + "(): Expected reduction dim to be specified for input.numel() == 0.");
  OpTrace trace;
  Tensor src = dim_opt ? t : t.reshape({-1});
  std::int64_t d = dim_opt ? wrap_dim(*dim_opt, t.dim()) : 0;
  if (src.dim() == 0) src = src.reshape({1});
  std::vector<bool> mask(static_cast<std::size_t>(src.dim()), false);
  mask[static_cast<std::size_t>(d)] = true;
  Shape keep = reduced_shape(src, mask, true);
  Tensor values = make_tensor(keep, t.dtype(), t.device());
  Tensor indices = make_tensor(keep, kInt64, t.device());
  // Walk the outer shape (reduced dim of size 1), scanning the reduced dim per element.
  Tensor outer = as_strided_alias(src, keep, src.strides(), src.storage_offset());
  std::int64_t len = src.size(d), step = src.stride(d);
  if (on_gpu(src)) gpu().extreme(values, indices, outer, len, step, want_max);
  else
    dispatch(t.dtype(), [&](auto tag) {
      using T = decltype(tag);
      for_each_strided<3>(keep, {data_bytes(values), data_bytes(indices), data_bytes(outer)},
                          {&values.strides(), &indices.strides(), &outer.strides()},
                          {static_cast<std::int64_t>(sizeof(T)), 8, static_cast<std::int64_t>(sizeof(T))},
                          [&](std::array<char*, 3> p, std::array<std::int64_t, 3> s, std::int64_t n) {
                            for (std::int64_t i = 0; i < n; ++i) {
                              const T* x = reinterpret_cast<const T*>(p[2] + i * s[2]);
                              T best = x[0];
                              std::int64_t at = 0;
                              for (std::int64_t k = 1; k < len; ++k) {
                                T v = x[k * step];
                                bool nan_v = std::isnan(static_cast<double>(v)), nan_b = std::isnan(static_cast<double>(best));
                                if (nan_b) break;
                                if (nan_v || (want_max ? v > best : v < best)) {
                                  best = v;
                                  at = k;
                                }
                              }
                              *reinterpret_cast<T*>(p[0] + i * s[0]) = best;
                              *reinterpret_cast<std::int64_t*>(p[1] + i * s[1]) = at;
                            }
                          });
    });
  Shape final_shape = dim_opt ? reduced_shape(src, mask, keepdim) : Shape{};
  values = as_strided_alias(values, final_shape, contiguous_strides(final_shape), 0);
  indices = as_strided_alias(indices, final_shape, contiguous_strides(final_shape), 0);
  trace.done(name, {&t}, returns_indices ? indices : values);
  return {values, indices};
}

// Gradient of max/min: shared evenly among the positions holding the extreme value.
// Gradient of max/min: over the whole tensor, shared evenly among the positions holding
// the extreme value; along a dim, to the index returned (PyTorch's rules both).
void record_extreme(Tensor& values, const Tensor& input, std::optional<std::int64_t> dim, bool keepdim, const char* name,
                    const Tensor& indices = Tensor()) {
  if (dim) {
    autograd::record(values, name, {input}, [in = input.sizes(), d = *dim, keepdim, indices](const Tensor& g, const Node&) {
      return Grads{scatter_add(in, d, keepdim ? indices : indices.unsqueeze(d), keepdim ? g : g.unsqueeze(d))};
    });
    return;
  }
  autograd::record(values, name, {input},
                   [in = SavedTensor(input), v = SavedTensor(values, true)](const Tensor& g, const Node& n) {
                     Tensor hit = in.unpack(n).eq(v.unpack(n)).to(g.dtype());
                     return Grads{g * hit / hit.sum()};
                   });
}

// amax/amin: each slice's extreme, its gradient shared evenly among the positions that
// hold it (PyTorch's rule for amax and amin; max(dim) gives it to the index it returns).
Tensor extreme_over(const Tensor& t, const Shape& dims, bool keepdim, bool largest) {
  auto mask = reduced_mask(t, dims);
  Tensor out;
  {
    NoGradGuard no_grad;
    out = t;
    for (std::size_t i = mask.size(); i-- > 0;)
      if (mask[i])
        out = std::get<0>(largest ? out.max(static_cast<std::int64_t>(i), true) : out.min(static_cast<std::int64_t>(i), true));
    if (!keepdim) {
      const Shape shape = reduced_shape(t, mask, false);
      out = as_strided_alias(out, shape, contiguous_strides(shape), 0);
    }
  }
  autograd::record(out, largest ? "AmaxBackward0" : "AminBackward0", {t},
                   [x = SavedTensor(t), y = SavedTensor(out, true), mask, keepdim](const Tensor& g, const Node& n) {
                     Tensor xv = x.unpack(n);
                     Tensor hit = xv.eq(expand_reduced(y.unpack(n), xv.sizes(), mask, keepdim)).to(g.dtype());
                     Shape dims;
                     for (std::size_t i = 0; i < mask.size(); ++i)
                       if (mask[i]) dims.push_back(static_cast<std::int64_t>(i));
                     return Grads{expand_reduced(g, xv.sizes(), mask, keepdim) * hit / hit.sum(dims, true)};
                   });
  return out;
}

Tensor prod_over(const Tensor& t, const std::vector<bool>& mask, bool keepdim) {
  Tensor out = fold_impl<true>(t, mask, keepdim, t.is_floating_point() ? t.dtype() : kInt64);
  // The gradient of each element is the product of the others: out / x where the slice
  // has no zero, the product of the rest at a slice's only zero, and 0 elsewhere.
  autograd::record(out, "ProdBackward1", {t}, [in = SavedTensor(t), mask, keepdim](const Tensor& g, const Node& n) {
    Tensor x = in.unpack(n);
    Shape dims;
    for (std::size_t i = 0; i < mask.size(); ++i)
      if (mask[i]) dims.push_back(static_cast<std::int64_t>(i));
    Tensor zero = x.eq(0);
    Tensor zeros_in_slice = zero.sum(dims, true);
    Tensor others = where(zero, ones_like(x), x);
    Tensor rest = fold_impl<true>(others, mask, true, x.dtype());
    Tensor only_zero = logical_and(zero, zeros_in_slice.eq(1));
    Tensor each = where(zeros_in_slice.eq(0), rest / others, where(only_zero, rest.expand(x.sizes()), zeros_like(x)));
    return Grads{expand_reduced(g, x.sizes(), mask, keepdim) * each};
  });
  return out;
}

}  // namespace

Tensor Tensor::sum() const {
  MEMLENS_API_ENTRY();
  return sum({}, false);
}

Tensor Tensor::sum(Shape dims, bool keepdim) const {
  MEMLENS_API_ENTRY();
  auto mask = reduced_mask(*this, dims);
  ScalarType out_type = is_floating_point() ? dtype() : kInt64;
  Tensor out = sum_impl(*this, mask, keepdim, out_type);
  autograd::record(out, "SumBackward1", {*this}, [in = sizes(), mask, keepdim](const Tensor& g, const Node&) {
    return Grads{expand_reduced(g, in, mask, keepdim)};
  });
  return out;
}

Tensor Tensor::mean() const {
  MEMLENS_API_ENTRY();
  return mean({}, false);
}

Tensor Tensor::mean(Shape dims, bool keepdim) const {
  MEMLENS_API_ENTRY();
  if (!is_floating_point())
    throw TypeError(
        "mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
        "dtype. Got: " +
        std::string(type_name(dtype())));
  auto mask = reduced_mask(*this, dims);
  std::int64_t count = 1;
  for (std::size_t i = 0; i < mask.size(); ++i)
    if (mask[i]) count *= sizes()[i];
  Tensor s = sum_impl(*this, mask, keepdim, kFloat64);
  Tensor out = cast(s.div(static_cast<double>(count)), dtype());
  autograd::record(out, "MeanBackward1", {*this}, [in = sizes(), mask, keepdim, count](const Tensor& g, const Node&) {
    return Grads{expand_reduced(g, in, mask, keepdim) / static_cast<double>(count)};
  });
  return out;
}

Tensor Tensor::prod() const {
  MEMLENS_API_ENTRY();
  return prod_over(*this, reduced_mask(*this, {}), false);
}

Tensor Tensor::prod(std::int64_t dim, bool keepdim) const {
  MEMLENS_API_ENTRY();
  return prod_over(*this, reduced_mask(*this, {dim}), keepdim);
}

Tensor Tensor::max() const {
  MEMLENS_API_ENTRY();
  auto [v, i] = extreme(*this, std::nullopt, false, true, "max");
  record_extreme(v, *this, std::nullopt, false, "MaxBackward1");
  return v;
}
Tensor Tensor::min() const {
  MEMLENS_API_ENTRY();
  auto [v, i] = extreme(*this, std::nullopt, false, false, "min");
  record_extreme(v, *this, std::nullopt, false, "MinBackward1");
  return v;
}
std::tuple<Tensor, Tensor> Tensor::max(std::int64_t d, bool keepdim) const {
  MEMLENS_API_ENTRY();
  d = wrap_dim(d, dim());
  auto [v, i] = extreme(*this, d, keepdim, true, "max");
  record_extreme(v, *this, d, keepdim, "MaxBackward0", i);
  return {v, i};
}
std::tuple<Tensor, Tensor> Tensor::min(std::int64_t d, bool keepdim) const {
  MEMLENS_API_ENTRY();
  d = wrap_dim(d, dim());
  auto [v, i] = extreme(*this, d, keepdim, false, "min");
  record_extreme(v, *this, d, keepdim, "MinBackward0", i);
  return {v, i};
}
Tensor Tensor::argmax() const {
  MEMLENS_API_ENTRY();
  return std::get<1>(extreme(*this, std::nullopt, false, true, "argmax", true));
}
Tensor Tensor::argmin() const {
  MEMLENS_API_ENTRY();
  return std::get<1>(extreme(*this, std::nullopt, false, false, "argmin", true));
}
Tensor Tensor::argmax(std::int64_t d, bool keepdim) const {
  MEMLENS_API_ENTRY();
  return std::get<1>(extreme(*this, d, keepdim, true, "argmax", true));
}
Tensor Tensor::argmin(std::int64_t d, bool keepdim) const {
  MEMLENS_API_ENTRY();
  return std::get<1>(extreme(*this, d, keepdim, false, "argmin", true));
}

Tensor Tensor::cumsum(std::int64_t dim_arg) const {
  MEMLENS_API_ENTRY();
  if (dim() == 0) {
    wrap_dim(dim_arg, 1);
    return clone();
  }
  const std::int64_t d = wrap_dim(dim_arg, dim());
  const ScalarType out_type = is_floating_point() ? dtype() : kInt64;  // integers sum in int64, as PyTorch's
  OpTrace trace;
  Tensor src = cast(*this, out_type);
  Tensor out = make_tensor(sizes(), out_type, device());
  // Walk every position but along d (d of size 1), running the sum along d from each.
  Shape keep = sizes();
  keep[static_cast<std::size_t>(d)] = 1;
  Tensor from = as_strided_alias(src, keep, src.strides(), src.storage_offset());
  const std::int64_t len = size(d), in_step = src.stride(d), out_step = out.stride(d);
  if (on_gpu(out)) gpu().cumsum(out, src, d);
  else
    dispatch(out_type, [&](auto tag) {
      using T = decltype(tag);
      using Acc = std::conditional_t<is_floating_v<T>, double, std::int64_t>;
      for_each_strided<2>(keep, {data_bytes(out), data_bytes(from)}, {&out.strides(), &from.strides()},
                          {static_cast<std::int64_t>(sizeof(T)), static_cast<std::int64_t>(sizeof(T))},
                          [&](std::array<char*, 2> p, std::array<std::int64_t, 2> st, std::int64_t n) {
                            for (std::int64_t i = 0; i < n; ++i) {
                              const T* x = reinterpret_cast<const T*>(p[1] + i * st[1]);
                              T* y = reinterpret_cast<T*>(p[0] + i * st[0]);
                              Acc acc = 0;
                              for (std::int64_t k = 0; k < len; ++k)
                                y[k * out_step] = static_cast<T>(acc += static_cast<Acc>(x[k * in_step]));
                            }
                          });
    });
  trace.done("cumsum", {this}, out);
  autograd::record(out, "CumsumBackward0", {*this},
                   [d](const Tensor& g, const Node&) { return Grads{g.flip({d}).cumsum(d).flip({d})}; });
  return out;
}

Tensor Tensor::var(Shape dims, bool unbiased, bool keepdim) const {
  MEMLENS_API_ENTRY();
  auto mask = reduced_mask(*this, dims);
  std::int64_t count = 1;
  for (std::size_t i = 0; i < mask.size(); ++i)
    if (mask[i]) count *= sizes()[i];
  Tensor centred = *this - mean(dims, true);
  return (centred * centred).sum(dims, keepdim) / static_cast<double>(std::max<std::int64_t>(count - (unbiased ? 1 : 0), 0));
}

Tensor Tensor::std(Shape dims, bool unbiased, bool keepdim) const {
  MEMLENS_API_ENTRY();
  auto mask = reduced_mask(*this, dims);
  std::int64_t count = 1;
  for (std::size_t i = 0; i < mask.size(); ++i)
    if (mask[i]) count *= sizes()[i];
  Tensor out;
  {
    NoGradGuard no_grad;
    out = var(dims, unbiased, keepdim).sqrt();
  }
  // var's gradient over 2 std, and 0 where std is 0 (PyTorch's std_backward): a constant
  // slice has no direction to move in, where sqrt's own gradient would make it 0/0.
  const double denom = static_cast<double>(std::max<std::int64_t>(count - (unbiased ? 1 : 0), 0));
  autograd::record(
      out, "StdBackward0", {*this},
      [x = SavedTensor(*this), y = SavedTensor(out, true), dims, mask, keepdim, denom](const Tensor& g, const Node& n) {
        Tensor xv = x.unpack(n), yv = y.unpack(n);
        Tensor scale = (g / (yv * denom)).masked_fill(yv.eq(0), 0);
        return Grads{(xv - xv.mean(dims, true)) * expand_reduced(scale, xv.sizes(), mask, keepdim)};
      });
  return out;
}

Tensor Tensor::norm(double p, Shape dims, bool keepdim) const {
  MEMLENS_API_ENTRY();
  if (auto r = autocast::run(
          "norm", [&](const Tensor& x) { return x.norm(p, dims, keepdim); }, *this))
    return *r;
  const auto mask = reduced_mask(*this, dims);
  Tensor out;
  {
    NoGradGuard no_grad;
    if (std::isinf(p)) out = p > 0 ? abs().amax(dims, keepdim) : abs().amin(dims, keepdim);
    else if (p == 0) out = ne(0).to(is_floating_point() ? dtype() : kFloat32).sum(dims, keepdim);  // the non-zeros, counted
    else if (p == 2) out = (*this * *this).sum(dims, keepdim).sqrt();
    else if (p == 1) out = abs().sum(dims, keepdim);
    else out = abs().pow(p).sum(dims, keepdim).pow(1 / p);
  }
  // PyTorch's norm_backward: x |x|^(p-2) / norm^(p-1), 0 where x or the norm is 0 (never
  // 0/0), nothing for p = 0; for p = +-inf the gradient is shared evenly among the
  // elements of each reduced slice whose |x| is its norm.
  autograd::record(
      out, "NormBackward1", {*this},
      [x = SavedTensor(*this), y = SavedTensor(out, true), p, dims, mask, keepdim](const Tensor& grad, const Node& n) {
        Tensor xv = x.unpack(n);
        if (p == 0) return Grads{zeros_like(xv)};
        Tensor yv = expand_reduced(y.unpack(n), xv.sizes(), mask, keepdim);
        Tensor g = expand_reduced(grad, xv.sizes(), mask, keepdim);
        Tensor zero = xv.eq(0);
        if (std::isinf(p)) {
          Tensor hit = xv.abs().eq(yv).to(g.dtype());
          return Grads{(xv / xv.abs()).masked_fill(zero, 0) * hit / hit.sum(dims, true) * g};
        }
        Tensor direction = p == 2 ? xv : (xv * xv.abs().pow(p - 2)).masked_fill(zero, 0);
        return Grads{direction * (g / yv.pow(p - 1)).masked_fill(yv.eq(0), 0)};
      });
  return out;
}

Tensor Tensor::amax(Shape dims, bool keepdim) const {
  MEMLENS_API_ENTRY();
  return extreme_over(*this, dims, keepdim, true);
}

Tensor Tensor::amin(Shape dims, bool keepdim) const {
  MEMLENS_API_ENTRY();
  return extreme_over(*this, dims, keepdim, false);
}

Tensor Tensor::logsumexp(Shape dims, bool keepdim) const {
  MEMLENS_API_ENTRY();
  if (auto r = autocast::run(
          "logsumexp", [&](const Tensor& x) { return x.logsumexp(dims, keepdim); }, *this))
    return *r;
  // Shifted by the largest value, so exp never overflows; an infinite largest value is not a shift.
  Tensor m = amax(dims, true).detach();
  m = m.masked_fill(m.abs().eq(std::numeric_limits<double>::infinity()), 0);
  Tensor out = (*this - m).exp().sum(dims, true).log() + m;
  return keepdim ? out : out.reshape(reduced_shape(*this, reduced_mask(*this, dims), false));
}

// Both keep only their output for backward, as PyTorch's do; along a host tensor's last
// dim one fused loop, elsewhere the shifted and exponentiated intermediates are
// temporaries of the forward, not saved tensors; 16-bit inputs are computed in float32
// and rounded once (detail::opmath). Neither
// takes integers (PyTorch has no integer kernel for them: a RuntimeError there).
namespace {
void check_floating(const Tensor& x, const char* op) {
  if (!x.is_floating_point())
    throw Error(std::string(op) + "(): not implemented for " + std::string(dtype_repr(x.dtype())) +
                ": give it a floating point tensor");
}

// The fused row loop (row_kernels.hpp) where dim is x's last and x's rows are on the host
// and contiguous: one op event, no full-size temporaries; nullopt otherwise.
std::optional<Tensor> along_rows(const Tensor& x, std::int64_t dim, bool log) {
  if (!host_rows(x) || wrap_dim(dim, x.dim()) != x.dim() - 1) return std::nullopt;
  OpTrace trace;
  Tensor out = make_tensor(x.sizes(), x.dtype(), x.device());
  softmax_rows(out, x, log);
  trace.done(log ? "log_softmax" : "softmax", {&x}, out);
  return out;
}
}  // namespace

Tensor log_softmax(const Tensor& x, std::int64_t dim) {
  MEMLENS_API_ENTRY();
  check_floating(x, "log_softmax");
  if (auto r = autocast::run(
          "log_softmax", [&](const Tensor& xf) { return log_softmax(xf, dim); }, x))
    return *r;
  Tensor out;
  {
    NoGradGuard no_grad;
    if (auto fused = along_rows(x, dim, true)) {
      out = *fused;
    } else {
      Tensor xf = opmath(x);
      Tensor shifted = xf - std::get<0>(xf.max(dim, true));
      out = rounded(shifted - shifted.exp().sum({dim}, true).log(), x.dtype());
    }
  }
  autograd::record(out, "LogSoftmaxBackward0", {x}, [y = SavedTensor(out, true), dim](const Tensor& g, const Node& n) {
    Tensor gf = opmath(g);
    return Grads{rounded(gf - opmath(y.unpack(n)).exp() * gf.sum({dim}, true), g.dtype())};
  });
  return out;
}

Tensor softmax(const Tensor& x, std::int64_t dim) {
  MEMLENS_API_ENTRY();
  check_floating(x, "softmax");
  if (auto r = autocast::run(
          "softmax", [&](const Tensor& xf) { return softmax(xf, dim); }, x))
    return *r;
  Tensor out;
  {
    NoGradGuard no_grad;
    if (auto fused = along_rows(x, dim, false)) {
      out = *fused;
    } else {
      Tensor xf = opmath(x);
      Tensor e = (xf - std::get<0>(xf.max(dim, true))).exp();
      out = rounded(e / e.sum({dim}, true), x.dtype());
    }
  }
  autograd::record(out, "SoftmaxBackward0", {x}, [y = SavedTensor(out, true), dim](const Tensor& g, const Node& n) {
    Tensor yv = opmath(y.unpack(n)), gf = opmath(g);
    return Grads{rounded(yv * (gf - (gf * yv).sum({dim}, true)), g.dtype())};
  });
  return out;
}

}  // namespace memlens
