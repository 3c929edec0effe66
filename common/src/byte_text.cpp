#include "memlens/common/byte_text.hpp"

#include <cstdio>

namespace memlens {

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

}  // namespace memlens
