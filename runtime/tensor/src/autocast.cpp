#include "autocast.hpp"

#include <array>
#include <string>
#include <unordered_map>
#include <utility>

#include "tensor_internal.hpp"

namespace memlens {

namespace {
thread_local bool enabled = false, suspended = false;
thread_local ScalarType target = kBFloat16;
thread_local int depth = 0;
// Parameters cast under the outermost guard: one copy each, as PyTorch's autocast cache.
thread_local std::unordered_map<const TensorImpl*, Tensor> cast_parameters;
}  // namespace

AutocastGuard::AutocastGuard(ScalarType dtype, bool on) : prev_enabled_(enabled), prev_dtype_(target) {
  if (on && dtype != kBFloat16 && dtype != kFloat16)
    throw TypeError("autocast: the dtype must be bfloat16 or float16, got " + std::string(dtype_repr(dtype)));
  enabled = on, target = dtype;
  ++depth;
}

AutocastGuard::~AutocastGuard() {
  enabled = prev_enabled_, target = prev_dtype_;
  if (--depth == 0) cast_parameters.clear();
}

namespace autocast {

bool is_enabled() { return enabled && !suspended; }

namespace {
// PyTorch's CUDA autocast lists (aten/src/ATen/autocast_mode.cpp), cut to the ops this
// runtime has, under PyTorch's names for them. memlens applies them on every device
// (PyTorch's CPU lists differ: the README's runtime section says so).
constexpr std::array kLists = {
    // lower_precision_fp: matrix products and convolutions, where 16-bit halves the
    // memory and tensor cores do the work.
    std::pair{std::string_view("conv2d"), Policy::Lower},
    std::pair{std::string_view("addmm"), Policy::Lower},
    std::pair{std::string_view("baddbmm"), Policy::Lower},
    std::pair{std::string_view("bmm"), Policy::Lower},
    std::pair{std::string_view("matmul"), Policy::Lower},
    std::pair{std::string_view("mm"), Policy::Lower},
    std::pair{std::string_view("linear"), Policy::Lower},
    std::pair{std::string_view("scaled_dot_product_attention"), Policy::Lower},
    // fp32 and fp32_set_opt_dtype: ops that need float32's range or precision.
    std::pair{std::string_view("exp"), Policy::Float32},
    std::pair{std::string_view("log"), Policy::Float32},
    std::pair{std::string_view("pow"), Policy::Float32},
    std::pair{std::string_view("layer_norm"), Policy::Float32},
    std::pair{std::string_view("norm"), Policy::Float32},
    std::pair{std::string_view("logsumexp"), Policy::Float32},
    std::pair{std::string_view("softmax"), Policy::Float32},
    std::pair{std::string_view("log_softmax"), Policy::Float32},
    std::pair{std::string_view("nll_loss"), Policy::Float32},
    std::pair{std::string_view("mse_loss"), Policy::Float32},
    std::pair{std::string_view("binary_cross_entropy_with_logits"), Policy::Float32},
};
}  // namespace

Policy policy(std::string_view op) {
  for (const auto& [name, p] : kLists)
    if (name == op) return p;
  throw Error("autocast: no list names the op '" + std::string(op) + "'");
}
ScalarType dtype() { return target; }

Tensor lower(const Tensor& t) {
  if (!is_enabled() || !t.defined() || !t.is_floating_point() || t.dtype() == target || t.dtype() == kFloat64) return t;
  const bool parameter = t.is_leaf() && t.requires_grad() && GradMode::is_enabled();
  if (parameter)
    if (auto it = cast_parameters.find(t.unsafe_impl()); it != cast_parameters.end()) return it->second;
  Tensor cast = t.to(target);
  if (parameter) cast_parameters.emplace(t.unsafe_impl(), cast);
  return cast;
}

Tensor to_float(const Tensor& t) {
  if (!is_enabled() || !t.defined() || opmath_type(t.dtype()) == t.dtype()) return t;
  return t.to(kFloat32);
}

Suspend::Suspend() : prev_(suspended) { suspended = true; }
Suspend::~Suspend() { suspended = prev_; }

}  // namespace autocast
}  // namespace memlens
