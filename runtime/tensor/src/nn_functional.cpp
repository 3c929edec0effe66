// Each function computes its result without autograd and records one node holding only
// what its backward reads, as PyTorch's fused kernels do; the intermediates of the
// forward are temporaries.
#include "memlens/tensor/nn_functional.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "autocast.hpp"
#include "memlens/tensor/autograd.hpp"
#include "row_kernels.hpp"
#include "tensor_internal.hpp"

namespace memlens::nn::functional {

using autograd::Node;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;
using detail::opmath;
using detail::rounded;

namespace {
Shape last_dims(std::size_t k) {
  Shape dims;
  for (std::size_t i = k; i > 0; --i) dims.push_back(-static_cast<std::int64_t>(i));
  return dims;
}
}  // namespace

Tensor gelu(const Tensor& x, std::string_view approximate) {
  MEMLENS_API_ENTRY();
  const bool tanh_form = approximate == "tanh";
  if (!tanh_form && approximate != "none") throw Error("approximate argument must be either none or tanh.");
  // The tanh form: 0.5 x (1 + tanh(k (x + c x^3))), k = sqrt(2 / pi), c = 0.044715.
  constexpr double k = std::numbers::sqrt2 * std::numbers::inv_sqrtpi, c = 0.044715;
  Tensor out;
  {
    NoGradGuard no_grad;
    out = tanh_form ? x * ((x + x * x * x * c) * k).tanh().add(1) * 0.5 : x * ((x * std::numbers::sqrt2 / 2).erf() + 1) * 0.5;
  }
  autograd::record(out, "GeluBackward0", {x}, [saved = SavedTensor(x), tanh_form](const Tensor& g, const Node& n) {
    Tensor xv = saved.unpack(n);
    if (tanh_form) {
      Tensor t = ((xv + xv * xv * xv * c) * k).tanh();
      return Grads{g * ((t + 1) * 0.5 + xv * 0.5 * (1 - t * t) * (xv * xv * (3 * c) + 1) * k)};
    }
    Tensor cdf = ((xv * std::numbers::sqrt2 / 2).erf() + 1) * 0.5;
    Tensor pdf = (xv * xv * -0.5).exp() * (std::numbers::inv_sqrtpi / std::numbers::sqrt2);
    return Grads{g * (cdf + xv * pdf)};
  });
  return out;
}

Tensor silu(const Tensor& x) {
  MEMLENS_API_ENTRY();
  Tensor out;
  {
    NoGradGuard no_grad;
    out = x * x.sigmoid();
  }
  autograd::record(out, "SiluBackward0", {x}, [saved = SavedTensor(x)](const Tensor& g, const Node& n) {
    Tensor xv = saved.unpack(n);
    Tensor s = xv.sigmoid();
    return Grads{g * s * (xv * (1 - s) + 1)};
  });
  return out;
}

Tensor dropout(const Tensor& x, double p, bool training) {
  MEMLENS_API_ENTRY();
  if (!(p >= 0 && p <= 1)) throw Error("dropout probability has to be between 0 and 1, but got " + std::to_string(p));
  if (!training || p == 0) return x;
  const double scale = p == 1 ? 0 : 1 / (1 - p);
  Tensor keep, out;
  {
    NoGradGuard no_grad;
    keep = rand(x.sizes(), TensorOptions().device(x.device())).ge(p);  // bool: one byte an element, as PyTorch's
    out = x * keep * scale;
  }
  autograd::record(out, "NativeDropoutBackward0", {x}, [mask = SavedTensor(keep), scale](const Tensor& g, const Node& n) {
    return Grads{g * mask.unpack(n) * scale};
  });
  return out;
}

namespace {
// The type PyTorch keeps a norm's saved statistics in: the input's, or float32 where a
// 16-bit input meets float32 parameters (its "mixed type").
ScalarType statistics_type(const Tensor& x, const Tensor& weight) {
  return weight.defined() && weight.dtype() == kFloat32 && opmath_type(x.dtype()) == kFloat32 ? kFloat32 : x.dtype();
}
}  // namespace

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias, double eps) {
  MEMLENS_API_ENTRY();
  if (auto r = autocast::run(
          "layer_norm",
          [&](const Tensor& xf, const Tensor& wf, const Tensor& bf) { return layer_norm(xf, normalized_shape, wf, bf, eps); }, x,
          weight, bias))
    return *r;
  const std::size_t k = normalized_shape.size();
  const Shape& s = x.sizes();
  bool fits = k >= 1 && k <= s.size() &&
              std::equal(normalized_shape.begin(), normalized_shape.end(), s.end() - static_cast<std::ptrdiff_t>(k));
  if (!fits) {
    std::string expected = "[*";
    for (auto d : normalized_shape) expected += ", " + std::to_string(d);
    throw ShapeError("Given normalized_shape=" + shape_str(normalized_shape) + ", expected input with shape " + expected +
                     "], but got input of size" + shape_str(s));
  }
  for (const Tensor* t : {&weight, &bias})
    if (t->defined() && t->sizes() != normalized_shape)
      throw ShapeError("layer_norm: weight and bias must have the shape " + shape_str(normalized_shape) + ", got " +
                       shape_str(t->sizes()));
  const Shape dims = last_dims(k);
  // Computed in float32 for 16-bit inputs and rounded once (detail::opmath); the
  // statistics kept for backward in PyTorch's type for them.
  const ScalarType stats = statistics_type(x, weight);
  Tensor mean, rstd, out;
  {
    NoGradGuard no_grad;
    Tensor m, r;
    if (detail::host_rows(x)) {  // one fused loop (row_kernels.hpp), as PyTorch's kernel
      detail::OpTrace trace;
      Shape kept = s;
      for (std::size_t i = s.size() - k; i < s.size(); ++i) kept[i] = 1;
      const ScalarType compute = opmath_type(x.dtype());
      auto param = [&](const Tensor& t) { return t.defined() ? detail::working_cast(t.contiguous(), compute) : t; };
      out = detail::make_tensor(s, x.dtype(), x.device());
      m = detail::make_tensor(kept, compute, x.device());
      r = detail::make_tensor(kept, compute, x.device());
      detail::layer_norm_rows(out, m, r, x, param(weight), param(bias), detail::numel_of(normalized_shape), eps);
      if (weight.defined() && bias.defined()) trace.done("layer_norm", {&x, &weight, &bias}, out);
      else trace.done("layer_norm", {&x}, out);
    } else {
      Tensor xf = opmath(x);
      m = xf.mean(dims, true);
      Tensor centred = xf - m;
      r = ((centred * centred).mean(dims, true) + eps).pow(-0.5);
      Tensor y = centred * r;
      if (weight.defined()) y = y * opmath(weight);
      if (bias.defined()) y = y + opmath(bias);
      out = rounded(y, x.dtype());
    }
    mean = rounded(m, stats);
    rstd = rounded(r, stats);
  }
  std::vector<Tensor> inputs{x};
  if (weight.defined()) inputs.push_back(weight);
  if (bias.defined()) inputs.push_back(bias);
  autograd::record(
      out, "NativeLayerNormBackward0", inputs,
      [sx = SavedTensor(x), sm = SavedTensor(mean), sr = SavedTensor(rstd),
       sw = weight.defined() ? SavedTensor(weight) : SavedTensor(), has_w = weight.defined(), has_b = bias.defined(),
       bias_type = bias.defined() ? bias.dtype() : x.dtype(), dims](const Tensor& g, const Node& n) {
        Tensor r = opmath(sr.unpack(n)), xv = sx.unpack(n), gf = opmath(g);
        Tensor xhat = (opmath(xv) - opmath(sm.unpack(n))) * r;
        Tensor wv = has_w ? sw.unpack(n) : Tensor();
        Tensor gw = has_w ? gf * opmath(wv) : gf;
        Grads grads{rounded(r * (gw - gw.mean(dims, true) - xhat * (gw * xhat).mean(dims, true)), xv.dtype())};
        if (has_w)
          grads.push_back(n.needs_input_grad(1) ? rounded(autograd::sum_to(gf * xhat, wv.sizes()), wv.dtype()) : Tensor());
        if (has_b) {
          Shape shape(dims.size());
          for (std::size_t i = 0; i < dims.size(); ++i) shape[i] = g.size(dims[i]);
          grads.push_back(rounded(autograd::sum_to(gf, shape), bias_type));
        }
        return grads;
      });
  return out;
}

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  MEMLENS_API_ENTRY();
  if (x.dim() < 2)
    throw ShapeError("batch_norm: expected an input of at least 2 dims ([N, C, ...]), got " + shape_str(x.sizes()));
  const std::int64_t c = x.size(1);
  for (const Tensor* t : {&running_mean, &running_var, &weight, &bias})
    if (t->defined() && t->sizes() != Shape{c})
      throw ShapeError("batch_norm: running statistics, weight and bias must be [" + std::to_string(c) + "], got " +
                       shape_str(t->sizes()));
  if (!training && !(running_mean.defined() && running_var.defined()))
    throw Error("batch_norm: evaluation needs running_mean and running_var");
  Shape dims, per_channel(static_cast<std::size_t>(x.dim()), 1);
  per_channel[1] = c;
  for (std::int64_t d = 0; d < x.dim(); ++d)
    if (d != 1) dims.push_back(d);
  const std::int64_t count = x.numel() / std::max<std::int64_t>(c, 1);
  if (training && count < 2)
    throw ValueError("Expected more than 1 value per channel when training, got input size " + shape_str(x.sizes()));
  // As layer_norm: float32 arithmetic for 16-bit inputs, one rounding, statistics kept in
  // PyTorch's type for them.
  const ScalarType stats = statistics_type(x, weight);
  Tensor mean, invstd, out;
  {
    NoGradGuard no_grad;
    Tensor xf = opmath(x), m, r, y;
    if (training) {
      m = xf.mean(dims, true);
      Tensor centred = xf - m;
      Tensor var = (centred * centred).mean(dims, true);
      r = (var + eps).pow(-0.5);
      y = centred * r;
      // The running statistics are updated in place, through handles to the caller's tensors.
      if (Tensor rm = running_mean; rm.defined()) rm.mul_(1 - momentum).add_(m.view({c}), momentum);
      if (Tensor rv = running_var; rv.defined())
        rv.mul_(1 - momentum).add_(var.view({c}), momentum * static_cast<double>(count) / static_cast<double>(count - 1));
    } else {
      m = opmath(running_mean.view(per_channel)).clone();
      r = (opmath(running_var.view(per_channel)) + eps).pow(-0.5);
      y = (xf - m) * r;
    }
    if (weight.defined()) y = y * opmath(weight.view(per_channel));
    if (bias.defined()) y = y + opmath(bias.view(per_channel));
    out = rounded(y, x.dtype());
    mean = rounded(m, stats);
    invstd = rounded(r, stats);
  }
  std::vector<Tensor> inputs{x};
  if (weight.defined()) inputs.push_back(weight);
  if (bias.defined()) inputs.push_back(bias);
  autograd::record(
      out, "NativeBatchNormBackward0", inputs,
      [sx = SavedTensor(x), sm = SavedTensor(mean), si = SavedTensor(invstd),
       sw = weight.defined() ? SavedTensor(weight) : SavedTensor(), has_w = weight.defined(), has_b = bias.defined(),
       bias_type = bias.defined() ? bias.dtype() : x.dtype(), training, dims, per_channel, c](const Tensor& g, const Node& n) {
        Tensor r = opmath(si.unpack(n)), xv = sx.unpack(n), gf = opmath(g);
        Tensor xhat = (opmath(xv) - opmath(sm.unpack(n))) * r;
        Tensor wv = has_w ? sw.unpack(n) : Tensor();
        Tensor gw = has_w ? gf * opmath(wv).view(per_channel) : gf;
        Grads grads{
            rounded(training ? r * (gw - gw.mean(dims, true) - xhat * (gw * xhat).mean(dims, true)) : gw * r, xv.dtype())};
        if (has_w) grads.push_back(n.needs_input_grad(1) ? rounded((gf * xhat).sum(dims).view({c}), wv.dtype()) : Tensor());
        if (has_b) grads.push_back(rounded(gf.sum(dims).view({c}), bias_type));
        return grads;
      });
  return out;
}

Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<std::int64_t> padding_idx) {
  MEMLENS_API_ENTRY();
  if (weight.dim() != 2)
    throw ShapeError("embedding: weight must be 2-D ([num_embeddings, dim]), got " + shape_str(weight.sizes()));
  if (indices.dtype() != kInt64 && indices.dtype() != kInt32)
    throw TypeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got " +
                    std::string(type_name(indices.dtype())) + " instead");
  const std::int64_t rows = weight.size(0);
  if (padding_idx && (*padding_idx >= rows || *padding_idx < -rows))
    throw ShapeError("Padding_idx must be within num_embeddings");
  const std::int64_t pad = padding_idx ? (*padding_idx + rows) % rows : -1;
  Shape shape = indices.sizes();
  shape.push_back(weight.size(1));
  Tensor flat = detail::cast(indices, kInt64).reshape({-1});  // int32 widened once, as index_select would
  Tensor out;
  {
    NoGradGuard no_grad;
    out = weight.index_select(0, flat).view(shape);
  }
  // PyTorch's node, keeping the indices: the rows' gradients summed per index, the
  // padding row's left at zero.
  autograd::record(out, "EmbeddingBackward0", {weight},
                   [si = SavedTensor(flat), rows = weight.sizes(), pad](const Tensor& g, const Node& n) {
                     Tensor gw = detail::index_select_backward(rows, 0, si.unpack(n).contiguous(), g.reshape({-1, rows[1]}));
                     if (pad >= 0) gw.select(0, pad).zero_();
                     return Grads{gw};
                   });
  return out;
}

namespace {
// The order of t's dims in memory, outermost first (by stride), when its last dim is
// innermost; {} otherwise. A gradient laid out as its input is (heads interleaved, as
// [B, T, H, D]) needs no copy when the transpose and merge of the forward are undone.
Shape memory_order(const Tensor& t) {
  Shape order(static_cast<std::size_t>(t.dim()));
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int64_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) { return t.stride(a) > t.stride(b); });
  return !order.empty() && order.back() == t.dim() - 1 ? order : Shape{};
}
}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  MEMLENS_API_ENTRY();
  if (auto r = autocast::run(
          "linear", [](const Tensor& in, const Tensor& w, const Tensor& b) { return linear(in, w, b); }, x, weight, bias))
    return *r;
  if (!bias.defined()) return x.matmul(weight.t());
  // PyTorch's at::linear: addmm, the bias added before the one rounding, for a matrix and
  // for a contiguous batch folded into one; otherwise matmul, then the bias.
  if (x.dim() == 2) return addmm(bias, x, weight.t());
  if (x.dim() > 2 && x.is_contiguous()) {
    Shape shape = x.sizes();
    shape.back() = weight.size(0);
    return addmm(bias, x.view({-1, x.size(-1)}), weight.t()).view(shape);
  }
  return x.matmul(weight.t()) + bias;
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask, double dropout_p,
                                    bool is_causal) {
  MEMLENS_API_ENTRY();
  if (auto r = autocast::run(
          "scaled_dot_product_attention",
          [&](const Tensor& ql, const Tensor& kl, const Tensor& vl) {
            return scaled_dot_product_attention(ql, kl, vl, attn_mask, dropout_p, is_causal);
          },
          q, k, v))
    return *r;
  if (q.dim() < 3 || k.dim() < 3 || v.dim() < 3)
    throw ShapeError("scaled_dot_product_attention: q, k and v need a batch dim and two more");
  if (attn_mask.defined() && is_causal)
    throw Error("scaled_dot_product_attention: explicit attn_mask should not be set when is_causal=True");
  if (attn_mask.defined() && attn_mask.dtype() != kBool)
    throw TypeError("scaled_dot_product_attention: attn_mask must be a bool tensor");
  const double scale = 1 / std::sqrt(static_cast<double>(q.size(-1)));
  // PyTorch's math path: the probabilities (batch x heads x T x S) are kept for backward,
  // the scores and masked scores are temporaries of the forward.
  Tensor attn, out;
  {
    NoGradGuard no_grad;
    Tensor scores = detail::batched_matmul(q, k.transpose(-2, -1)) * scale;
    Tensor hidden = is_causal             ? detail::triangle_mask(q.size(-2), k.size(-2), 1, /*lower=*/false, q.device())
                    : attn_mask.defined() ? attn_mask.eq(0)
                                          : Tensor();
    if (hidden.defined()) scores = scores.masked_fill(hidden, -std::numeric_limits<double>::infinity());
    attn = softmax(scores, -1);
    if (dropout_p > 0) attn = dropout(attn, dropout_p, true);
    // [B, H, T, D] laid out as [B, T, H, D], as PyTorch's attention kernels return it:
    // the usual transpose(1, 2) and merge of the heads that follows is a view, not a copy.
    out = detail::batched_matmul(attn, v, q.dim() == v.dim() ? memory_order(q) : Shape{});
  }
  autograd::record(
      out, "ScaledDotProductAttentionBackward0", {q, k, v},
      [sq = SavedTensor(q), sk = SavedTensor(k), sv = SavedTensor(v), sa = SavedTensor(attn), scale](const Tensor& g,
                                                                                                     const Node& n) {
        Tensor qv = sq.unpack(n), kv = sk.unpack(n), vv = sv.unpack(n), a = sa.unpack(n);
        // softmax's backward, in place on one T x S buffer: hidden places get 0 (a is 0 there).
        Tensor gs = detail::batched_matmul(g, vv.transpose(-2, -1));
        gs.sub_((gs * a).sum({-1}, true)).mul_(a).mul_(scale);
        // Each gradient in its input's layout, reduced over batch dims the input broadcast.
        auto grad = [&](std::size_t i, const Tensor& x, const Tensor& y, const Tensor& like) {
          if (!n.needs_input_grad(i)) return Tensor();
          Tensor r = detail::batched_matmul(x, y, x.dim() == like.dim() ? memory_order(like) : Shape{});
          return r.sizes() == like.sizes() ? r : autograd::sum_to(r, like.sizes());
        };
        return Grads{grad(0, gs, kv, qv), grad(1, gs.transpose(-2, -1), qv, kv), grad(2, a.transpose(-2, -1), g, vv)};
      });
  return out;
}

}  // namespace memlens::nn::functional
