#pragma once
// Numbers read from text a person typed (flags, environment) or a file someone sent: one
// strict reader for all of them, so no flag takes "nan", "-1" or "1e400" by accident.
// Each throws NumberError saying what was wrong and what was expected; callers prefix the
// flag or variable it came from.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace memlens {

class NumberError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A finite decimal number, the whole text, within [min, max].
double parse_real(std::string_view text, double min, double max);
// A whole number written in digits, the whole text, within [min, max].
std::uint64_t parse_count(std::string_view text, std::uint64_t min, std::uint64_t max);
// "16GiB", "512MB", "4096": bytes (units are powers of 1024), at most 2^62.
std::uint64_t parse_byte_size(std::string_view text);
// "5%" or "0.05": a fraction within [0, max_fraction].
double parse_fraction(std::string_view text, double max_fraction);

}  // namespace memlens
