#include "memlens/common/device.hpp"

#include <charconv>

#include "memlens/common/error.hpp"

namespace memlens {

Device::Device(std::string_view spec) : type_(DeviceType::CPU), index_(0) {
  std::string_view name = spec;
  if (auto colon = spec.find(':'); colon != std::string_view::npos) {
    name = spec.substr(0, colon);
    auto digits = spec.substr(colon + 1);
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index_);
    if (ec != std::errc() || p != digits.data() + digits.size() || index_ < 0)
      throw DeviceError("Invalid device string: '" + std::string(spec) + "'");
  }
  if (name == "cpu") type_ = DeviceType::CPU;
  else if (name == "sim") type_ = DeviceType::Sim;
  else if (name == "cuda") type_ = DeviceType::CUDA;
  else throw DeviceError("Expected one of cpu, sim, cuda device type at start of device string: " + std::string(spec));
  if (index_ != 0 && type_ != DeviceType::CUDA)
    throw DeviceError("Invalid device string: '" + std::string(spec) + "' (" + std::string(name) + " has only device 0)");
}

std::string Device::str() const {
  switch (type_) {
    case DeviceType::CPU:
      return "cpu";
    case DeviceType::Sim:
      return "sim:" + std::to_string(index_);
    case DeviceType::CUDA:
      return "cuda:" + std::to_string(index_);
    case DeviceType::CUDAHost:
      return "cuda_host";
  }
  return "?";
}

}  // namespace memlens
