#include "memlens/runtime/device.hpp"

#include <cstdlib>
#include <iostream>
#include <mutex>

#include "cuda_probe.hpp"
#include "memlens/runtime/errors.hpp"
#include "memlens/runtime/memory.hpp"
#include "memlens/runtime/memory_source.hpp"

namespace memlens {

std::string cuda_unavailable_reason() {
  static const std::string reason = [] {
    auto probe = detail::probe_cuda();
    if (!probe.compiled) return std::string("memlens was built without CUDA (MEMLENS_CUDA=OFF or no nvcc)");
    if (probe.device_count == 0) return "no CUDA device: " + probe.error;
    return "the CUDA backend is not built yet (found " + std::to_string(probe.device_count) +
           " CUDA device(s))";
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
    if (want == "cuda")
      throw DeviceError("MEMLENS_DEVICE=cuda but CUDA is not usable: " + cuda_unavailable_reason());
    if (want != "auto" && !want.empty())
      throw DeviceError("MEMLENS_DEVICE: unknown device '" + want + "' (expected auto, cpu, sim or cuda)");
    std::cerr << "memlens: cuda is served by the simulated device sim:0 (" +
                     format_bytes(static_cast<std::int64_t>(sim_capacity_from_env())) + "): " +
                     cuda_unavailable_reason() + "\n";
    return Device(DeviceType::Sim);
  }();
  return served;
}

}  // namespace

Device resolve(const Device& d) {
  if (!d.is_cuda()) return d;
  return accelerator();
}

Device default_device() { return accelerator(); }

}  // namespace memlens
