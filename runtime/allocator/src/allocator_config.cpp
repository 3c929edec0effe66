#include "memlens/allocator/allocator_config.hpp"

#include <cstdlib>
#include <sstream>

#include "memlens/allocator/errors.hpp"

namespace memlens {

namespace {

std::size_t parse_number(const std::string& key, const std::string& value) {
  std::size_t used = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size()) throw Error("MEMLENS_ALLOC_CONF: " + key + " expects a number, got '" + value + "'");
  return static_cast<std::size_t>(v);
}

}  // namespace

AllocatorConfig AllocatorConfig::parse(const std::string& text) {
  AllocatorConfig c;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    auto colon = item.find(':');
    if (colon == std::string::npos) throw Error("MEMLENS_ALLOC_CONF: expected key:value, got '" + item + "'");
    std::string key = item.substr(0, colon), value = item.substr(colon + 1);
    if (key == "max_split_size_mb") {
      std::size_t mb = parse_number(key, value);
      // PyTorch's floor: splitting is always allowed below the large-segment size.
      if (mb <= 20) throw Error("MEMLENS_ALLOC_CONF: max_split_size_mb must be > 20, got " + value);
      c.max_split_size = mb << 20;
    } else if (key == "roundup_power2_divisions") {
      std::size_t d = parse_number(key, value);
      if (d != 0 && (d & (d - 1)) != 0)
        throw Error("MEMLENS_ALLOC_CONF: roundup_power2_divisions must be a power of 2, got " + value);
      c.roundup_power2_divisions = d;
    } else if (key == "expandable_segments") {
      if (value == "True" || value == "true" || value == "1") c.expandable_segments = true;
      else if (value == "False" || value == "false" || value == "0") c.expandable_segments = false;
      else throw Error("MEMLENS_ALLOC_CONF: expandable_segments expects True or False, got '" + value + "'");
    } else {
      throw Error("MEMLENS_ALLOC_CONF: unknown option '" + key +
                  "' (known: max_split_size_mb, roundup_power2_divisions, expandable_segments)");
    }
  }
  return c;
}

AllocatorConfig AllocatorConfig::from_env() {
  const char* env = std::getenv("MEMLENS_ALLOC_CONF");
  return env ? parse(env) : AllocatorConfig{};
}

std::string AllocatorConfig::to_string() const {
  std::string s;
  if (max_split_size != std::numeric_limits<std::size_t>::max())
    s += "max_split_size_mb:" + std::to_string(max_split_size >> 20) + ",";
  s += "roundup_power2_divisions:" + std::to_string(roundup_power2_divisions) + ",";
  s += std::string("expandable_segments:") + (expandable_segments ? "True" : "False");
  return s;
}

}  // namespace memlens
