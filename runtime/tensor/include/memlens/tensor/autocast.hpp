#pragma once
// Mixed precision, as torch.autocast on CUDA: inside an AutocastGuard, the ops on
// PyTorch's lower-precision list (mm, bmm, matmul, addmm, baddbmm, Linear, conv2d,
// scaled_dot_product_attention) run in the guard's dtype (bfloat16 or float16), and those
// on its float32 lists (exp, log, pow, norm, logsumexp, softmax, log_softmax, layer_norm,
// nll_loss, mse_loss, binary_cross_entropy_with_logits, and the losses built from them) in
// float32; the lists are PyTorch's CUDA ones on every device. A parameter is cast once
// per outermost guard and that copy is what the ops keep for backward, beside the
// float32 master weight: the memory mixed precision adds, as well as the activations it
// halves.
#include "memlens/tensor/tensor.hpp"

namespace memlens {

class AutocastGuard {
 public:
  explicit AutocastGuard(ScalarType dtype = kBFloat16, bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool prev_enabled_;
  ScalarType prev_dtype_;
};

namespace autocast {
// Whether ops on this thread autocast now (inside a guard, outside an op already cast).
bool is_enabled();
ScalarType dtype();
}  // namespace autocast

}  // namespace memlens
