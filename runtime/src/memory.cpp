#include "memlens/runtime/memory.hpp"

#include <cstdio>
#include <sstream>
#include <vector>

#include "memlens/runtime/allocator.hpp"

namespace memlens {

namespace {
Allocator& alloc(const Device& d) { return allocator_for(resolve(d)); }
}  // namespace

std::int64_t memory_allocated(const Device& d) { return alloc(d).stats().allocated_bytes.current; }
std::int64_t memory_reserved(const Device& d) { return alloc(d).stats().reserved_bytes.current; }
std::int64_t max_memory_allocated(const Device& d) { return alloc(d).stats().allocated_bytes.peak; }
std::int64_t max_memory_reserved(const Device& d) { return alloc(d).stats().reserved_bytes.peak; }
void reset_peak_memory_stats(const Device& d) { alloc(d).reset_peak_stats(); }
void empty_cache(const Device& d) { alloc(d).empty_cache(); }

std::string format_bytes(std::int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes < 0 ? -bytes : bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[48];
  if (u == 0) std::snprintf(buf, sizeof buf, "%s%lld B", bytes < 0 ? "-" : "", static_cast<long long>(v));
  else std::snprintf(buf, sizeof buf, "%s%.2f %s", bytes < 0 ? "-" : "", v, units[u]);
  return buf;
}

std::string memory_summary(const Device& d) {
  Device r = resolve(d);
  AllocatorStats s = alloc(d).stats();
  std::vector<std::string> rows;
  char line[160];
  auto row = [&](const std::string& name, const std::string& a, const std::string& b, const std::string& c,
                 const std::string& e) {
    std::snprintf(line, sizeof line, "| %-24s | %11s | %11s | %11s | %11s |", name.c_str(), a.c_str(), b.c_str(),
                  c.c_str(), e.c_str());
    rows.emplace_back(line);
  };
  auto bytes_row = [&](const char* name, const StatCounter& c) {
    row(name, format_bytes(c.current), format_bytes(c.peak), format_bytes(c.allocated), format_bytes(c.freed));
  };
  auto count_row = [&](const char* name, const StatCounter& c) {
    row(name, std::to_string(c.current), std::to_string(c.peak), std::to_string(c.allocated), std::to_string(c.freed));
  };
  row("Metric", "Cur Usage", "Peak Usage", "Tot Alloc", "Tot Freed");
  std::size_t width = rows[0].size();
  const std::string thick = "|" + std::string(width - 2, '=') + "|", thin = "|" + std::string(width - 2, '-') + "|";
  bytes_row("Allocated memory", s.allocated_bytes);
  bytes_row("Requested memory", s.requested_bytes);
  bytes_row("Reserved memory", s.reserved_bytes);
  count_row("Allocations", s.allocation);
  count_row("Segments", s.segment);
  auto centred = [&](const std::string& text) {
    std::size_t pad = width - 2 > text.size() ? width - 2 - text.size() : 0;
    return "|" + std::string(pad / 2, ' ') + text + std::string(pad - pad / 2, ' ') + "|";
  };
  std::ostringstream out;
  out << thick << "\n" << centred("memlens memory summary, device " + r.str()) << "\n" << thin << "\n";
  out << rows[0] << "\n" << thin << "\n";
  for (std::size_t i = 1; i < rows.size(); ++i) {
    out << rows[i] << "\n";
    if (i == 3) out << thin << "\n";
  }
  out << thin << "\n"
      << centred("device allocs " + std::to_string(s.num_device_alloc) + ", device frees " +
                 std::to_string(s.num_device_free) + ", OOMs " + std::to_string(s.num_ooms))
      << "\n" << thick << "\n";
  return out.str();
}

}  // namespace memlens
