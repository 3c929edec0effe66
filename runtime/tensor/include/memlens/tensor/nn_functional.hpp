#pragma once
// The functions behind the nn modules (torch.nn.functional). Each keeps for backward what
// PyTorch's does (layer_norm: input, mean and rstd; dropout: its mask; gelu: its input),
// so a trace of a model shows the memory the same model holds under PyTorch.
#include <cstddef>
#include <optional>
#include <string_view>

#include "memlens/tensor/tensor.hpp"

namespace memlens::nn::functional {

// x W^T + b (b optional), one op under autocast.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());
// Exact GELU, x * Phi(x) (PyTorch's default, approximate "none"), or its tanh
// approximation (approximate "tanh"); any other word is refused.
Tensor gelu(const Tensor& x, std::string_view approximate = "none");
// x * sigmoid(x).
Tensor silu(const Tensor& x);
// Zeroes each element with probability p and scales the rest by 1 / (1 - p); the
// identity when not training.
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true);
// Normalises over the last normalized_shape.size() dims (which must equal
// normalized_shape), then scales by weight and shifts by bias when they are given.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                  double eps = 1e-5);
// Rows of weight ([num_embeddings, dim]) picked by indices (int64 or int32, any shape): the
// result is indices' shape followed by dim. The padding_idx row (negative: from the end)
// gets no gradient.
Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<std::int64_t> padding_idx = std::nullopt);
// softmax(q k^T / sqrt(d) + mask) v over the last two dims (q, k, v: [batch..., T, d]).
// attn_mask (bool) marks the positions that take part; is_causal hides every later one.
// Kept for backward: q, k, v and the probabilities, as PyTorch's math path keeps them;
// the result is laid out as q is (heads interleaved for [B, H, T, D] views of [B, T, H, D]).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask = Tensor(),
                                    double dropout_p = 0, bool is_causal = false);

// conv2d's padding: `zeros` on every side, or a mode: "same" (the output as large as the
// input; stride 1; an odd total puts the extra zero after, as PyTorch) or "valid" (none).
// Any other word is refused.
struct Conv2dPadding {
  Conv2dPadding(std::int64_t zeros = 0) : zeros(zeros) {}  // NOLINT: implicit, as PyTorch's int padding
  // A mode word (a literal; a literal 0 stays a number, not a null pointer).
  template <std::size_t N>
  Conv2dPadding(const char (&mode)[N]) : Conv2dPadding(std::string_view(mode)) {}  // NOLINT: implicit, as PyTorch's
  explicit Conv2dPadding(std::string_view mode);
  std::int64_t zeros = 0;
  bool same = false;
};

// 2-D convolution of x [N, C, H, W] with weight [O, C / groups, kh, kw] (square stride,
// taps `dilation` apart; each of `groups` groups of O / groups filters sees its own C /
// groups channels), plus bias [O] when given: [N, O, oh, ow]. One image [C, H, W] gives
// [O, oh, ow], as PyTorch's unbatched input.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), std::int64_t stride = 1,
              Conv2dPadding padding = 0, std::int64_t dilation = 1, std::int64_t groups = 1);
// Square-window pooling over [N, C, H, W] (or one image [C, H, W]); stride 0 means the
// kernel size; ceil_mode keeps a last partial window (one that starts inside the input or
// its leading padding). Max pooling keeps the argmax indices for backward; average
// pooling divides by the window within the padded input, or (count_include_pad false)
// by the input elements it covers.
Tensor max_pool2d(const Tensor& x, std::int64_t kernel, std::int64_t stride = 0, std::int64_t padding = 0,
                  bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& x, std::int64_t kernel, std::int64_t stride = 0, std::int64_t padding = 0, bool ceil_mode = false,
                  bool count_include_pad = true);
// Batch normalisation over every dim but dim 1 (channels). Training: the batch's
// statistics, and running_mean/running_var (when given) move towards them by momentum
// (the variance unbiased); evaluation: the running statistics.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), bool training = true, double momentum = 0.1, double eps = 1e-5);

}  // namespace memlens::nn::functional
