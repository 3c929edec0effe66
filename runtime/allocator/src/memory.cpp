#include "memlens/allocator/memory.hpp"

#include <cstdio>
#include <sstream>
#include <vector>

namespace memlens {

namespace {
Allocator& alloc(const Device& d) { return allocator_for(resolve(d)); }
}  // namespace

std::int64_t memory_allocated(const Device& d) { return alloc(d).stats().allocated_bytes.all.current; }
std::int64_t memory_reserved(const Device& d) { return alloc(d).stats().reserved_bytes.all.current; }
std::int64_t max_memory_allocated(const Device& d) { return alloc(d).stats().allocated_bytes.all.peak; }
std::int64_t max_memory_reserved(const Device& d) { return alloc(d).stats().reserved_bytes.all.peak; }
void reset_peak_memory_stats(const Device& d) { alloc(d).reset_peak_stats(); }
void empty_cache(const Device& d) { alloc(d).empty_cache(); }
std::map<std::string, std::int64_t> memory_stats(const Device& d) { return alloc(d).stats().as_map(); }
std::vector<SegmentSnapshot> memory_snapshot(const Device& d) { return alloc(d).snapshot(); }
std::map<std::string, std::int64_t> host_memory_stats() { return alloc(Device(DeviceType::CUDAHost)).stats().as_map(); }
void host_empty_cache() { alloc(Device(DeviceType::CUDAHost)).empty_cache(); }

Fragmentation fragmentation(const Allocator& a) {
  AllocatorStats s = a.stats();
  Fragmentation f;
  for (auto& seg : a.snapshot())
    for (auto& b : seg.blocks)
      if (b.state == BlockSnapshot::State::Free) {
        f.total_free += static_cast<std::int64_t>(b.size);
        f.largest_free_block = std::max(f.largest_free_block, static_cast<std::int64_t>(b.size));
      }
  auto allocated = static_cast<double>(s.allocated_bytes.all.current);
  auto reserved = static_cast<double>(s.reserved_bytes.all.current);
  f.reserved_over_allocated = allocated > 0 ? reserved / allocated : 0;
  f.inactive_split_over_reserved = reserved > 0 ? static_cast<double>(s.inactive_split_bytes.all.current) / reserved : 0;
  f.free_fragmentation =
      f.total_free > 0 ? 1.0 - static_cast<double>(f.largest_free_block) / static_cast<double>(f.total_free) : 0;
  return f;
}

Fragmentation fragmentation(const Device& d) { return fragmentation(alloc(d)); }

std::string memory_summary(const Device& d) { return memory_summary(alloc(d)); }

// The layout of torch.cuda.memory_summary(): a row per statistic and pool.
std::string memory_summary(const Allocator& a) {
  AllocatorStats s = a.stats();
  Fragmentation f = fragmentation(a);
  std::vector<std::string> lines;
  char line[200];
  auto row = [&](const std::string& name, const std::string& c0, const std::string& c1, const std::string& c2,
                 const std::string& c3) {
    std::snprintf(line, sizeof line, "| %-26s | %11s | %11s | %11s | %11s |", name.c_str(), c0.c_str(), c1.c_str(), c2.c_str(),
                  c3.c_str());
    lines.emplace_back(line);
  };
  row("Metric", "Cur Usage", "Peak Usage", "Tot Alloc", "Tot Freed");
  const std::size_t width = lines[0].size();
  const std::string thick = "|" + std::string(width - 2, '=') + "|", thin = "|" + std::string(width - 2, '-') + "|";
  auto text = [&](const std::string& t) {
    std::snprintf(line, sizeof line, "| %-*s |", static_cast<int>(width - 4), t.c_str());
    lines.emplace_back(line);
  };
  auto group = [&](const char* name, const StatArray& st, bool bytes) {
    auto fmt = [&](std::int64_t v) { return bytes ? format_bytes(v) : std::to_string(v); };
    for (auto [label, c] : {std::pair{"", &st.all}, {"  from large pool", &st.large_pool}, {"  from small pool", &st.small_pool}})
      row(*label ? label : name, fmt(c->current), fmt(c->peak), fmt(c->allocated), fmt(c->freed));
    lines.push_back(thin);
  };
  std::vector<std::string> head;
  head.push_back(thick);
  {
    std::string title = "memlens memory summary, device " + a.device().str();
    std::size_t pad = width - 2 - title.size();
    head.push_back("|" + std::string(pad / 2, ' ') + title + std::string(pad - pad / 2, ' ') + "|");
  }
  head.push_back(thin);
  lines.insert(lines.begin(), head.begin(), head.end());
  lines.push_back(thin);
  group("Allocated memory", s.allocated_bytes, true);
  group("Active memory", s.active_bytes, true);
  group("Requested memory", s.requested_bytes, true);
  group("Reserved memory", s.reserved_bytes, true);
  group("Non-releasable memory", s.inactive_split_bytes, true);
  group("Allocations", s.allocation, false);
  group("Active allocs", s.active, false);
  group("Segments", s.segment, false);
  group("Non-releasable allocs", s.inactive_split, false);
  text("Device allocs " + std::to_string(s.num_device_alloc) + ", device frees " + std::to_string(s.num_device_free) +
       ", alloc retries " + std::to_string(s.num_alloc_retries) + ", OOMs " + std::to_string(s.num_ooms));
  char frag[160];
  std::snprintf(frag, sizeof frag, "Fragmentation: reserved/allocated %.2f, inactive split/reserved %.2f",
                f.reserved_over_allocated, f.inactive_split_over_reserved);
  text(frag);
  std::snprintf(frag, sizeof frag, "  free %s in blocks, largest %s: 1 - largest/free = %.2f", format_bytes(f.total_free).c_str(),
                format_bytes(f.largest_free_block).c_str(), f.free_fragmentation);
  text(frag);
  if (!a.config_string().empty()) text("Allocator config: " + a.config_string());
  lines.push_back(thick);
  std::ostringstream out;
  for (auto& l : lines) out << l << "\n";
  return out.str();
}

}  // namespace memlens
