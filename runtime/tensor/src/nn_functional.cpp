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
#include "tensor_internal.hpp"

namespace memlens::nn::functional {

using autograd::Node;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

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

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias, double eps) {
  MEMLENS_API_ENTRY();
  if (auto r = autocast::in_float32(x, [&](const Tensor& xf) { return layer_norm(xf, normalized_shape, weight, bias, eps); }))
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
  Tensor mean, rstd, out;
  {
    NoGradGuard no_grad;
    mean = x.mean(dims, true);
    Tensor centred = x - mean;
    rstd = ((centred * centred).mean(dims, true) + eps).pow(-0.5);
    out = centred * rstd;
    if (weight.defined()) out = out * weight;
    if (bias.defined()) out = out + bias;
  }
  std::vector<Tensor> inputs{x};
  if (weight.defined()) inputs.push_back(weight);
  if (bias.defined()) inputs.push_back(bias);
  autograd::record(out, "NativeLayerNormBackward0", inputs,
                   [sx = SavedTensor(x), sm = SavedTensor(mean), sr = SavedTensor(rstd),
                    sw = weight.defined() ? SavedTensor(weight) : SavedTensor(), has_w = weight.defined(), has_b = bias.defined(),
                    dims](const Tensor& g, const Node& n) {
                     Tensor r = sr.unpack(n);
                     Tensor xhat = (sx.unpack(n) - sm.unpack(n)) * r;
                     Tensor gw = has_w ? g * sw.unpack(n) : g;
                     Grads grads{r * (gw - gw.mean(dims, true) - xhat * (gw * xhat).mean(dims, true))};
                     if (has_w)
                       grads.push_back(n.needs_input_grad(1) ? autograd::sum_to(g * xhat, sw.unpack(n).sizes()) : Tensor());
                     if (has_b) {
                       Shape shape(dims.size());
                       for (std::size_t i = 0; i < dims.size(); ++i) shape[i] = g.size(dims[i]);
                       grads.push_back(autograd::sum_to(g, shape));
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
  Tensor mean, invstd, out;
  {
    NoGradGuard no_grad;
    if (training) {
      mean = x.mean(dims, true);
      Tensor centred = x - mean;
      Tensor var = (centred * centred).mean(dims, true);
      invstd = (var + eps).pow(-0.5);
      out = centred * invstd;
      // The running statistics are updated in place, through handles to the caller's tensors.
      if (Tensor rm = running_mean; rm.defined()) rm.mul_(1 - momentum).add_(mean.view({c}), momentum);
      if (Tensor rv = running_var; rv.defined())
        rv.mul_(1 - momentum).add_(var.view({c}), momentum * static_cast<double>(count) / static_cast<double>(count - 1));
    } else {
      mean = running_mean.view(per_channel).clone();
      invstd = (running_var.view(per_channel) + eps).pow(-0.5);
      out = (x - mean) * invstd;
    }
    if (weight.defined()) out = out * weight.view(per_channel);
    if (bias.defined()) out = out + bias.view(per_channel);
  }
  std::vector<Tensor> inputs{x};
  if (weight.defined()) inputs.push_back(weight);
  if (bias.defined()) inputs.push_back(bias);
  autograd::record(out, "NativeBatchNormBackward0", inputs,
                   [sx = SavedTensor(x), sm = SavedTensor(mean), si = SavedTensor(invstd),
                    sw = weight.defined() ? SavedTensor(weight) : SavedTensor(), has_w = weight.defined(), has_b = bias.defined(),
                    training, dims, per_channel, c](const Tensor& g, const Node& n) {
                     Tensor r = si.unpack(n);
                     Tensor xhat = (sx.unpack(n) - sm.unpack(n)) * r;
                     Tensor gw = has_w ? g * sw.unpack(n).view(per_channel) : g;
                     Grads grads{training ? r * (gw - gw.mean(dims, true) - xhat * (gw * xhat).mean(dims, true)) : gw * r};
                     if (has_w) grads.push_back(n.needs_input_grad(1) ? (g * xhat).sum(dims).view({c}) : Tensor());
                     if (has_b) grads.push_back(g.sum(dims).view({c}));
                     return grads;
                   });
  return out;
}

Tensor embedding(const Tensor& indices, const Tensor& weight) {
  MEMLENS_API_ENTRY();
  if (weight.dim() != 2)
    throw ShapeError("embedding: weight must be 2-D ([num_embeddings, dim]), got " + shape_str(weight.sizes()));
  if (indices.dtype() != kInt64 && indices.dtype() != kInt32)
    throw TypeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got " +
                    std::string(type_name(indices.dtype())) + " instead");
  Shape shape = indices.sizes();
  shape.push_back(weight.size(1));
  return weight.index_select(0, indices.reshape({-1})).view(shape);
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
  // One op for autocast: input, weight and bias in the lower dtype.
  Tensor in = autocast::lower(x), w = autocast::lower(weight), b = autocast::lower(bias);
  autocast::Suspend cast;
  Tensor y = in.matmul(w.t());
  return b.defined() ? y + b : y;
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask, double dropout_p,
                                    bool is_causal) {
  MEMLENS_API_ENTRY();
  if (autocast::is_enabled()) {
    Tensor ql = autocast::lower(q), kl = autocast::lower(k), vl = autocast::lower(v);
    autocast::Suspend cast;
    return scaled_dot_product_attention(ql, kl, vl, attn_mask, dropout_p, is_causal);
  }
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
