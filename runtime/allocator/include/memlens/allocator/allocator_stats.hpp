#pragma once
// PyTorch's memory_stats, kept by an observer of the allocator's events.
#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "memlens/allocator/allocator_events.hpp"

namespace memlens {

// current / peak / allocated (cumulative) / freed (cumulative).
struct StatCounter {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  std::int64_t allocated = 0;
  std::int64_t freed = 0;
  // Branch-free: it runs several times on every allocation.
  void update(std::int64_t delta) {
    current += delta;
    peak = current > peak ? current : peak;
    allocated += delta > 0 ? delta : 0;
    freed += delta < 0 ? -delta : 0;
  }
  void reset_peak() { peak = current; }
};

// One counter for all pools, the small pool and the large pool.
struct StatArray {
  StatCounter all, small_pool, large_pool;
  void update(Pool p, std::int64_t delta) {
    all.update(delta);
    (p == Pool::Small ? small_pool : large_pool).update(delta);
  }
  void reset_peak();
};

struct AllocatorStats {
  StatArray allocation, segment, active, inactive_split;
  StatArray allocated_bytes, reserved_bytes, active_bytes, inactive_split_bytes, requested_bytes;
  std::int64_t num_alloc_retries = 0, num_ooms = 0, num_device_alloc = 0, num_device_free = 0;

  // "allocated_bytes.all.current" style keys, as torch.cuda.memory_stats().
  std::map<std::string, std::int64_t> as_map() const;
};

class StatsObserver final : public AllocatorObserver {
 public:
  void on_event(const AllocatorEvent& e) override;
  const AllocatorStats& stats() const { return stats_; }
  void reset_peak();

 private:
  AllocatorStats stats_;
};

}  // namespace memlens
