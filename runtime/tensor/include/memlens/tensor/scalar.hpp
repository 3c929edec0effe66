#pragma once
#include <cstdint>
#include <type_traits>

#include "memlens/tensor/dtype.hpp"

namespace memlens {

// A number that remembers whether it was written as an integer, a float or a bool, so
// `int_tensor * 2` stays int64 and `int_tensor * 0.5` becomes float32, as in PyTorch.
class Scalar {
 public:
  Scalar() = default;
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : kind_(kInt64), i_(static_cast<std::int64_t>(v)), d_(static_cast<double>(v)) {}
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : kind_(kFloat64), i_(static_cast<std::int64_t>(v)), d_(static_cast<double>(v)) {}
  Scalar(bool v) : kind_(kBool), i_(v), d_(v) {}

  double to_double() const { return d_; }
  std::int64_t to_int() const { return i_; }
  bool is_integral() const { return kind_ != kFloat64; }
  bool is_floating_point() const { return kind_ == kFloat64; }
  ScalarType kind() const { return kind_; }

 private:
  ScalarType kind_ = kInt64;
  std::int64_t i_ = 0;
  double d_ = 0;
};

}  // namespace memlens
