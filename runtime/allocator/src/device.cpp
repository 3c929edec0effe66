#include "memlens/allocator/device.hpp"

#include <cstdlib>
#include <iostream>
#include <mutex>

#include "cuda_probe.hpp"
#include "memlens/allocator/errors.hpp"
#include "memlens/allocator/memory.hpp"
#include "memlens/allocator/memory_source.hpp"
#include "memlens/allocator/stream.hpp"

namespace memlens {

std::string cuda_unavailable_reason() {
  static const std::string reason = [] {
    auto probe = detail::probe_cuda();
    if (!probe.compiled) return std::string("memlens was built without CUDA (MEMLENS_CUDA=OFF or no nvcc)");
    if (probe.device_count == 0) return "no CUDA device: " + probe.error;
    return std::string();
  }();
  return reason;
}

namespace {

// MEMLENS_DEVICE picks what serves accelerator requests: auto (default), cpu, sim, cuda.
Device accelerator() {
  static const Device served = [] {
    const char* env = std::getenv("MEMLENS_DEVICE");
    std::string want = env ? env : "auto";
    if (want == "cpu") return kCPU;
    if (want == "sim") return Device(DeviceType::Sim);
    if (want != "auto" && !want.empty() && want != "cuda")
      throw DeviceError("MEMLENS_DEVICE: unknown device '" + want + "' (expected auto, cpu, sim or cuda)");
    if (detail::cuda_usable()) return Device(DeviceType::CUDA);
    if (want == "cuda") throw DeviceError("MEMLENS_DEVICE=cuda but CUDA is not usable: " + cuda_unavailable_reason());
    std::cerr << "memlens: cuda is served by the simulated device sim:0 (" +
                     format_bytes(static_cast<std::int64_t>(sim_capacity_from_env())) + "): " + cuda_unavailable_reason() + "\n";
    return Device(DeviceType::Sim);
  }();
  return served;
}

}  // namespace

Device resolve(const Device& d) {
  if (!d.is_cuda()) return d;
  const Device served = accelerator();
  if (!served.is_cuda()) return served;
  const int count = detail::cuda_device_count();
  if (d.index() < 0 || d.index() >= count)
    throw DeviceError("CUDA error: invalid device ordinal (cuda:" + std::to_string(d.index()) + " of " + std::to_string(count) +
                      " device(s))");
  return d;
}

StreamEvents& accelerator_streams() {
  if (accelerator().is_cuda()) return detail::cuda_stream_events();
  return SimStreams::instance();
}

Device default_device() { return accelerator(); }

}  // namespace memlens
