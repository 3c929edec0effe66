// nn::MultiheadAttention, as torch.nn.MultiheadAttention computes it.
#include <cmath>
#include <limits>

#include "memlens/tensor/autograd.hpp"
#include "memlens/tensor/nn.hpp"
#include "memlens/tensor/nn_functional.hpp"
#include "tensor_internal.hpp"

namespace memlens::nn {

MultiheadAttention::MultiheadAttention(std::int64_t embed_dim, std::int64_t num_heads, double dropout, bool bias,
                                       bool batch_first)
    : Module(Library{}), embed_dim_(embed_dim), num_heads_(num_heads), dropout_(dropout), batch_first_(batch_first) {
  if (num_heads <= 0 || embed_dim % num_heads != 0)
    throw Error("embed_dim must be divisible by num_heads (embed_dim " + std::to_string(embed_dim) + ", num_heads " +
                std::to_string(num_heads) + ")");
  {
    NoGradGuard guard;
    in_proj_weight = empty({3 * embed_dim, embed_dim});
    init::xavier_uniform_(in_proj_weight);
    if (bias) in_proj_bias = zeros({3 * embed_dim});
  }
  register_parameter("in_proj_weight", in_proj_weight);
  if (bias) register_parameter("in_proj_bias", in_proj_bias);
  out_proj = std::make_shared<Linear>(embed_dim, embed_dim, bias);
  if (bias) {
    NoGradGuard guard;
    out_proj->bias.zero_();
  }
  register_module("out_proj", out_proj);
}

Tensor MultiheadAttention::forward(const Tensor& x) {
  MEMLENS_API_ENTRY();
  return std::get<0>(attention(x, x, x, Tensor(), false));
}

std::tuple<Tensor, Tensor> MultiheadAttention::attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                                         const Tensor& attn_mask, bool need_weights, bool is_causal) {
  MEMLENS_API_ENTRY();
  for (const Tensor* t : {&query, &key, &value})
    if (t->dim() != 3 || t->size(2) != embed_dim_)
      throw ShapeError("MultiheadAttention: expected inputs of shape " + std::string(batch_first_ ? "[B, T, " : "[T, B, ") +
                       std::to_string(embed_dim_) + "], got " + shape_str(t->sizes()));
  if (attn_mask.defined() && is_causal) throw Error("MultiheadAttention: give attn_mask or is_causal, not both");
  // [B, T, E] views whatever the layout.
  auto batch_major = [&](const Tensor& t) { return batch_first_ ? t : t.transpose(0, 1); };
  Tensor q_in = batch_major(query), k_in = batch_major(key), v_in = batch_major(value);
  const std::int64_t E = embed_dim_, H = num_heads_, D = E / H, B = q_in.size(0), T = q_in.size(1), S = k_in.size(1);
  auto part = [&](std::int64_t i) {
    return std::pair{in_proj_weight.narrow(0, i * E, E), in_proj_bias.defined() ? in_proj_bias.narrow(0, i * E, E) : Tensor()};
  };
  Tensor q, k, v;
  if (query.is_same(key) && key.is_same(value)) {  // self-attention: one projection, as PyTorch's
    std::vector<Tensor> qkv = functional::linear(q_in, in_proj_weight, in_proj_bias).chunk(3, -1);
    q = qkv[0], k = qkv[1], v = qkv[2];
  } else {
    auto [wq, bq] = part(0);
    auto [wk, bk] = part(1);
    auto [wv, bv] = part(2);
    q = functional::linear(q_in, wq, bq), k = functional::linear(k_in, wk, bk), v = functional::linear(v_in, wv, bv);
  }
  auto heads = [&](const Tensor& t, std::int64_t len) { return t.reshape({B, len, H, D}).transpose(1, 2); };
  q = heads(q, T), k = heads(k, S), v = heads(v, S);
  const double p = is_training() ? dropout_ : 0;
  Tensor out, weights;
  if (!need_weights) {
    Tensor allowed = attn_mask.defined() && attn_mask.dtype() == kBool ? attn_mask.logical_not() : Tensor();
    if (attn_mask.defined() && !allowed.defined())
      throw TypeError("MultiheadAttention: a float attn_mask needs need_weights=true here");
    out = functional::scaled_dot_product_attention(q, k, v, allowed, p, is_causal);
  } else {
    Tensor scores = q.matmul(k.transpose(-2, -1)) * (1 / std::sqrt(static_cast<double>(D)));
    Tensor hidden = is_causal ? detail::triangle_mask(T, S, 1, /*lower=*/false, q.device())
                    : attn_mask.defined() && attn_mask.dtype() == kBool ? attn_mask
                                                                        : Tensor();
    if (hidden.defined()) scores = scores.masked_fill(hidden, -std::numeric_limits<double>::infinity());
    else if (attn_mask.defined()) scores = scores + attn_mask;
    Tensor attn = softmax(scores, -1);
    weights = attn.mean({1});
    out = functional::dropout(attn, p, p > 0).matmul(v);
  }
  out = (*out_proj)(out.transpose(1, 2).reshape({B, T, E}));
  return {batch_first_ ? out : out.transpose(0, 1), weights};
}

}  // namespace memlens::nn
