#include "memlens/runtime/allocator.hpp"

#include <algorithm>

#include "memlens/runtime/caching_allocator.hpp"
#include "memlens/runtime/caching_host_allocator.hpp"
#include "memlens/runtime/direct_allocator.hpp"
#include "memlens/runtime/errors.hpp"

namespace memlens {

AllocatorStats Allocator::stats() const {
  std::lock_guard lock(mu_);
  return stats_.stats();
}

void Allocator::reset_peak_stats() {
  std::lock_guard lock(mu_);
  stats_.reset_peak();
}

void Allocator::add_observer(AllocatorObserver* o) {
  std::lock_guard lock(mu_);
  observers_.push_back(o);
}

void Allocator::remove_observer(AllocatorObserver* o) {
  std::lock_guard lock(mu_);
  observers_.erase(std::remove(observers_.begin(), observers_.end(), o), observers_.end());
}

void Allocator::notify(const AllocatorEvent& e) {
  stats_.on_event(e);
  for (auto* o : observers_) o->on_event(e);
}

Allocator& allocator_for(const Device& resolved) {
  // Process-lifetime allocators: tensors in static storage may outlive main().
  static Allocator* cpu = new DirectAllocator(std::make_unique<HostSource>());
  switch (resolved.type()) {
    case DeviceType::CPU: return *cpu;
    case DeviceType::Sim: {
      static Allocator* sim =
          new CachingAllocator(std::make_unique<SimSource>(sim_capacity_from_env()), AllocatorConfig::from_env());
      return *sim;
    }
    case DeviceType::CUDAHost: {
      static Allocator* pinned = new CachingHostAllocator(std::make_unique<HostSource>(Device(DeviceType::CUDAHost)));
      return *pinned;
    }
    case DeviceType::CUDA: break;
  }
  throw DeviceError("no allocator for device " + resolved.str() + " (the CUDA backend is not built)");
}

// No CUDA backend yet (issue 20): its GPUs will go between sim:0 and cuda_host.
std::vector<Device> allocatable_devices() { return {kCPU, Device(DeviceType::Sim), Device(DeviceType::CUDAHost)}; }

}  // namespace memlens
