#include "memlens/allocator/allocator.hpp"

#include <algorithm>
#include <mutex>

#include "cuda_probe.hpp"
#include "memlens/allocator/caching_allocator.hpp"
#include "memlens/allocator/cuda_source.hpp"
#include "memlens/allocator/caching_host_allocator.hpp"
#include "memlens/allocator/direct_allocator.hpp"
#include "memlens/allocator/errors.hpp"

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
    case DeviceType::CPU:
      return *cpu;
    case DeviceType::Sim: {
      static Allocator* sim = new CachingAllocator(sim_source_from_env(), AllocatorConfig::from_env());
      return *sim;
    }
    case DeviceType::CUDAHost: {
      // Page-locked where a GPU can copy from it; plain host memory named cuda_host elsewhere.
      static Allocator* pinned = detail::cuda_usable()
                                     ? new CachingHostAllocator(std::make_unique<PinnedSource>(), &detail::cuda_stream_events())
                                     : new CachingHostAllocator(std::make_unique<HostSource>(Device(DeviceType::CUDAHost)));
      return *pinned;
    }
    case DeviceType::CUDA: {
      constexpr int kMaxGpus = 64;
      static std::once_flag made[kMaxGpus];
      static Allocator* gpus[kMaxGpus] = {};
      const int i = resolved.index();
      if (i < 0 || i >= std::min(kMaxGpus, detail::cuda_device_count())) break;
      std::call_once(made[i], [i] {
        gpus[i] =
            new CachingAllocator(std::make_unique<CudaSource>(i), AllocatorConfig::from_env(), &detail::cuda_stream_events());
      });
      return *gpus[i];
    }
  }
  throw DeviceError("no allocator for device " + resolved.str() + " (" +
                    (cuda_unavailable_reason().empty() ? "no such CUDA device" : cuda_unavailable_reason()) + ")");
}

std::vector<Device> allocatable_devices() {
  std::vector<Device> devices{kCPU, Device(DeviceType::Sim)};
  for (int i = 0; i < detail::cuda_device_count(); ++i) devices.emplace_back(DeviceType::CUDA, i);
  devices.emplace_back(DeviceType::CUDAHost);
  return devices;
}

}  // namespace memlens
