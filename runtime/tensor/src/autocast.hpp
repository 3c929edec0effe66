#pragma once
// What the ops call to autocast their inputs (see memlens/tensor/autocast.hpp).
#include <optional>

#include "memlens/tensor/autocast.hpp"

namespace memlens::autocast {

// A floating input in the guard's dtype (with autograd); a parameter's copy is made once
// per outermost guard. Anything else unchanged.
Tensor lower(const Tensor& t);
inline bool is_16bit(const Tensor& t) { return t.defined() && (t.dtype() == kFloat16 || t.dtype() == kBFloat16); }
// A 16-bit floating input in float32 (with autograd); anything else unchanged.
Tensor to_float(const Tensor& t);

class Suspend;
// For the ops that need float32's range: op(x in float32) with autocasting off, when
// autocast is on and x is 16-bit; nullopt otherwise (the op runs as it is).
template <class Op>
std::optional<Tensor> in_float32(const Tensor& x, Op&& op);

// Autocasting off while an op that has cast its inputs runs (its inner ops run as they are).
class Suspend {
 public:
  Suspend();
  ~Suspend();
  Suspend(const Suspend&) = delete;
  Suspend& operator=(const Suspend&) = delete;

 private:
  bool prev_;
};

template <class Op>
std::optional<Tensor> in_float32(const Tensor& x, Op&& op) {
  if (!is_enabled() || !is_16bit(x)) return std::nullopt;
  Tensor xf = to_float(x);
  Suspend cast;
  return op(xf);
}

}  // namespace memlens::autocast
