#pragma once
// Option values read with the one strict number reader (memlens/common/number_text.hpp);
// a bad value is a UsageError naming the flag: "--top: invalid count '-1' (...)".
#include <cstdint>
#include <string>

#include "exit_codes.hpp"
#include "memlens/common/number_text.hpp"

namespace memlens::cli {

inline std::uint64_t byte_flag(const std::string& flag, const std::string& text, std::uint64_t min = 0) {
  std::uint64_t v = 0;
  try {
    v = parse_byte_size(text);
  } catch (const NumberError& e) {
    throw UsageError(flag + ": " + e.what());
  }
  if (v < min) throw UsageError(flag + ": " + text + " is too small (at least " + std::to_string(min) + " bytes)");
  return v;
}

inline double real_flag(const std::string& flag, const std::string& text, double min, double max) {
  try {
    return parse_real(text, min, max);
  } catch (const NumberError& e) {
    throw UsageError(flag + ": " + e.what());
  }
}

inline std::uint64_t count_flag(const std::string& flag, const std::string& text, std::uint64_t min, std::uint64_t max) {
  try {
    return parse_count(text, min, max);
  } catch (const NumberError& e) {
    throw UsageError(flag + ": " + e.what());
  }
}

}  // namespace memlens::cli
