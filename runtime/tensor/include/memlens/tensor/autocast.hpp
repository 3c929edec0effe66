#pragma once
// Mixed precision, as torch.autocast: inside an AutocastGuard, the matmul-like ops (mm,
// bmm, matmul, Linear, conv2d, scaled_dot_product_attention) run in the guard's dtype
// (bfloat16 or float16), and the ops that need float32's range (softmax, log_softmax,
// layer_norm and the losses) in float32. A parameter is cast once per outermost guard
// and that copy is what the ops keep for backward, beside the float32 master weight:
// the memory mixed precision adds, as well as the activations it halves.
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
