#include "memlens/common/byte_text.hpp"

#include <cstdio>

namespace memlens {

namespace {

std::string magnitude_text(std::uint64_t magnitude, bool negative) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(magnitude);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[48];
  if (u == 0) std::snprintf(buf, sizeof buf, "%s%llu B", negative ? "-" : "", static_cast<unsigned long long>(magnitude));
  else std::snprintf(buf, sizeof buf, "%s%.2f %s", negative ? "-" : "", v, units[u]);
  return buf;
}

}  // namespace

std::string format_bytes(std::int64_t bytes) {
  // The magnitude as unsigned: -INT64_MIN does not fit an int64.
  return magnitude_text(bytes < 0 ? 0 - static_cast<std::uint64_t>(bytes) : static_cast<std::uint64_t>(bytes), bytes < 0);
}

std::string format_byte_count(std::uint64_t bytes) { return magnitude_text(bytes, false); }

}  // namespace memlens
