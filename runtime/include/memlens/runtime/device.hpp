#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace memlens {

enum class DeviceType : std::uint8_t { CPU, Sim, CUDA };

// A device as the user names it. `Device("cuda")` may be *served* by another device
// (sim, when no GPU is present); `resolve()` says which one really holds the memory.
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
  std::string str() const;  // "cpu", "sim:0", "cuda:0"
  bool operator==(const Device&) const = default;

 private:
  DeviceType type_;
  int index_;
};

inline const Device kCPU{DeviceType::CPU};

// The device that really serves `d`. A request for cuda without a usable CUDA backend is
// served by sim, said once on stderr; with MEMLENS_DEVICE=cuda it throws instead.
Device resolve(const Device& d);
// The accelerator the process uses by default: MEMLENS_DEVICE (cpu|sim|cuda), else cuda
// resolved as above.
Device default_device();
// Why cuda is not available ("" when it is); used in notices and skipped GPU tests.
std::string cuda_unavailable_reason();

}  // namespace memlens
