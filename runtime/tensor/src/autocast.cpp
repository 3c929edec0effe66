#include "autocast.hpp"

#include <unordered_map>

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
  if (!is_enabled() || !is_16bit(t)) return t;
  return t.to(kFloat32);
}

Suspend::Suspend() : prev_(suspended) { suspended = true; }
Suspend::~Suspend() { suspended = prev_; }

}  // namespace autocast
}  // namespace memlens
