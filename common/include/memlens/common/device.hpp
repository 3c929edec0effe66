#pragma once
// Device names: what the runtime allocates on and what a trace's device list says.
#include <cstdint>
#include <string>
#include <string_view>

namespace memlens {

// CUDAHost: pinned (page-locked) host memory. It holds CPU tensors (their device() is
// cpu, as PyTorch's pinned tensors are) but is its own device in a trace, `cuda_host`,
// as in PyTorch's memory snapshots.
enum class DeviceType : std::uint8_t { CPU, Sim, CUDA, CUDAHost };

// A device as the user names it. `Device("cuda")` may be *served* by another device
// (sim, when no GPU is present); the runtime's `resolve()` says which one really holds
// the memory.
class Device {
 public:
  Device(DeviceType type = DeviceType::CPU, int index = 0) : type_(type), index_(index) {}
  // "cpu", "sim", "cuda", "cuda:0", "sim:0"; throws DeviceError on anything else.
  Device(std::string_view spec);
  Device(const char* spec) : Device(std::string_view(spec)) {}

  DeviceType type() const { return type_; }
  int index() const { return index_; }
  bool is_cpu() const { return type_ == DeviceType::CPU; }
  bool is_sim() const { return type_ == DeviceType::Sim; }
  bool is_cuda() const { return type_ == DeviceType::CUDA; }
  std::string str() const;  // "cpu", "sim:0", "cuda:0", "cuda_host"
  bool operator==(const Device&) const = default;

 private:
  DeviceType type_;
  int index_;
};

inline const Device kCPU{DeviceType::CPU};

}  // namespace memlens
