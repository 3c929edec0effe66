#pragma once
// What the ops call to autocast their inputs (see memlens/tensor/autocast.hpp). Which op
// casts to what is written once, in autocast.cpp's table of PyTorch's lists; an op asks
// for its own entry by PyTorch's name for it.
#include <optional>
#include <string_view>
#include <tuple>

#include "memlens/tensor/autocast.hpp"

namespace memlens::autocast {

// PyTorch's CUDA autocast lists: lower_precision_fp (the guard's 16-bit type) and fp32
// (with fp32_set_opt_dtype: float32).
enum class Policy : unsigned char { Lower, Float32 };
// The list that names `op`; an Error for an op on no list (a call site naming it wrongly).
Policy policy(std::string_view op);

// A floating input in the guard's dtype (with autograd); a parameter's copy is made once
// per outermost guard. Anything else unchanged.
Tensor lower(const Tensor& t);
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

// Under autocast: f(the inputs cast as `op`'s list says; float64, integer and undefined
// inputs as they are), run with autocasting suspended, as PyTorch's autocast kernels
// call the op. nullopt when autocast is off: the op then runs as it is.
template <class F, class... T>
std::optional<Tensor> run(std::string_view op, F&& f, const T&... inputs) {
  if (!is_enabled()) return std::nullopt;
  const Policy p = policy(op);
  std::tuple<T...> cast{(p == Policy::Lower ? lower(inputs) : to_float(inputs))...};
  Suspend suspended;
  return std::apply(f, cast);
}

}  // namespace memlens::autocast
