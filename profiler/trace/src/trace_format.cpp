#include "memlens/trace/trace_format.hpp"

#include <iterator>

namespace memlens::profiler {

std::string_view language_name(Language l) {
  constexpr std::string_view names[] = {"unknown", "native", "python"};
  auto i = static_cast<std::size_t>(l);
  return i < std::size(names) ? names[i] : "unknown";
}

}  // namespace memlens::profiler
