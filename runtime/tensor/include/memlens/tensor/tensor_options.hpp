#pragma once
#include <cstdint>
#include <vector>

#include "memlens/allocator/device.hpp"
#include "memlens/tensor/dtype.hpp"

namespace memlens {

using Shape = std::vector<std::int64_t>;

// How a new tensor is made: dtype, device, whether it requires grad. Implicit from a
// dtype or a device so `zeros({2}, kInt64)` and `zeros({2}, Device("cuda"))` both read well.
class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(ScalarType t) : dtype_(t), has_dtype_(true) {}
  TensorOptions(const Device& d) : device_(d) {}
  TensorOptions(DeviceType d) : device_(d) {}
  TensorOptions(const char* device) : device_(device) {}

  TensorOptions dtype(ScalarType t) const {
    auto o = *this;
    o.dtype_ = t;
    o.has_dtype_ = true;
    return o;
  }
  TensorOptions device(const Device& d) const {
    auto o = *this;
    o.device_ = d;
    return o;
  }
  TensorOptions requires_grad(bool r) const {
    auto o = *this;
    o.requires_grad_ = r;
    return o;
  }

  ScalarType dtype() const { return dtype_; }
  bool has_dtype() const { return has_dtype_; }
  const Device& device() const { return device_; }
  bool requires_grad() const { return requires_grad_; }

 private:
  ScalarType dtype_ = kFloat32;
  bool has_dtype_ = false;
  Device device_ = kCPU;
  bool requires_grad_ = false;
};

inline TensorOptions dtype(ScalarType t) { return TensorOptions().dtype(t); }
inline TensorOptions device(const Device& d) { return TensorOptions().device(d); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }

}  // namespace memlens
