#include "memlens/allocator/allocator_stats.hpp"

namespace memlens {

void StatArray::reset_peak() {
  all.reset_peak();
  small_pool.reset_peak();
  large_pool.reset_peak();
}

std::map<std::string, std::int64_t> AllocatorStats::as_map() const {
  std::map<std::string, std::int64_t> out;
  auto add = [&](const std::string& name, const StatArray& a) {
    for (auto [pool, c] : {std::pair{"all", &a.all}, {"small_pool", &a.small_pool}, {"large_pool", &a.large_pool}}) {
      std::string prefix = name + "." + pool + ".";
      out[prefix + "current"] = c->current;
      out[prefix + "peak"] = c->peak;
      out[prefix + "allocated"] = c->allocated;
      out[prefix + "freed"] = c->freed;
    }
  };
  add("allocation", allocation);
  add("segment", segment);
  add("active", active);
  add("inactive_split", inactive_split);
  add("allocated_bytes", allocated_bytes);
  add("reserved_bytes", reserved_bytes);
  add("active_bytes", active_bytes);
  add("inactive_split_bytes", inactive_split_bytes);
  add("requested_bytes", requested_bytes);
  out["num_alloc_retries"] = num_alloc_retries;
  out["num_ooms"] = num_ooms;
  out["num_device_alloc"] = num_device_alloc;
  out["num_device_free"] = num_device_free;
  return out;
}

void StatsObserver::on_event(const AllocatorEvent& e) {
  using K = EventKind;
  auto& s = stats_;
  switch (e.kind) {
    case K::SegmentAlloc:
      s.segment.update(e.pool, 1);
      s.reserved_bytes.update(e.pool, e.size);
      ++s.num_device_alloc;
      break;
    case K::SegmentFree:
      s.segment.update(e.pool, -1);
      s.reserved_bytes.update(e.pool, -e.size);
      ++s.num_device_free;
      break;
    case K::Alloc:
      s.allocation.update(e.pool, 1);
      s.allocated_bytes.update(e.pool, e.size);
      s.requested_bytes.update(e.pool, e.requested);
      s.active.update(e.pool, 1);
      s.active_bytes.update(e.pool, e.size);
      if (e.split_count) s.inactive_split.update(e.pool, e.split_count);
      if (e.split_bytes) s.inactive_split_bytes.update(e.pool, e.split_bytes);
      break;
    case K::FreeRequested:
      s.allocation.update(e.pool, -1);
      s.allocated_bytes.update(e.pool, -e.size);
      s.requested_bytes.update(e.pool, -e.requested);
      break;
    case K::FreeCompleted:
      s.active.update(e.pool, -1);
      s.active_bytes.update(e.pool, -e.size);
      if (e.split_count) s.inactive_split.update(e.pool, e.split_count);
      if (e.split_bytes) s.inactive_split_bytes.update(e.pool, e.split_bytes);
      break;
    case K::AllocRetry:
      ++s.num_alloc_retries;
      break;
    case K::AllocFailed:
      break;
    default:
      break;  // the kinds of tensors, not of allocators
    case K::Oom:
      ++s.num_ooms;
      break;
  }
}

void StatsObserver::reset_peak() {
  for (StatArray* a : {&stats_.allocation, &stats_.segment, &stats_.active, &stats_.inactive_split, &stats_.allocated_bytes,
                       &stats_.reserved_bytes, &stats_.active_bytes, &stats_.inactive_split_bytes, &stats_.requested_bytes})
    a->reset_peak();
}

}  // namespace memlens
