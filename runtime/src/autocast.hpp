#pragma once
// What the ops call to autocast their inputs (see memlens/runtime/autocast.hpp).
#include "memlens/runtime/autocast.hpp"

namespace memlens::autocast {

// A floating input in the guard's dtype (with autograd); a parameter's copy is made once
// per outermost guard. Anything else unchanged.
Tensor lower(const Tensor& t);
inline bool is_16bit(const Tensor& t) { return t.defined() && (t.dtype() == kFloat16 || t.dtype() == kBFloat16); }
// A 16-bit floating input in float32 (with autograd); anything else unchanged.
Tensor to_float(const Tensor& t);

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

}  // namespace memlens::autocast
