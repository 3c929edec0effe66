#include "memlens/common/number_text.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <system_error>

namespace memlens {

namespace {

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

std::string number_text(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

}  // namespace

double parse_real(std::string_view text, double min, double max) {
  const std::string range = "from " + number_text(min) + " to " + number_text(max);
  double v = 0;
  // from_chars takes no leading '+' or space and no "0x"; "nan" and "inf" are caught below.
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, std::chars_format::general);
  if (text.empty() || ec == std::errc::invalid_argument || end != text.data() + text.size())
    throw NumberError("invalid number " + quoted(text) + " (expected a number " + range + ")");
  if (ec == std::errc::result_out_of_range || !std::isfinite(v) || v < min || v > max)
    throw NumberError("number " + quoted(text) + " out of range (expected " + range + ")");
  return v;
}

std::uint64_t parse_count(std::string_view text, std::uint64_t min, std::uint64_t max) {
  const std::string range = "from " + std::to_string(min) + " to " + std::to_string(max);
  std::uint64_t v = 0;
  bool digits = !text.empty();
  for (char c : text) digits = digits && std::isdigit(static_cast<unsigned char>(c));
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (!digits) throw NumberError("invalid count " + quoted(text) + " (expected a whole number " + range + ")");
  if (ec != std::errc() || end != text.data() + text.size() || v < min || v > max)
    throw NumberError("count " + quoted(text) + " out of range (expected " + range + ")");
  return v;
}

std::uint64_t parse_byte_size(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == 0) throw NumberError("invalid byte size " + quoted(text) + " (expected e.g. 16GiB, 512MiB or 1048576)");
  constexpr std::uint64_t kMax = std::uint64_t{1} << 62;
  std::uint64_t number = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + i, number);
  if (ec != std::errc() || end != text.data() + i) throw NumberError("invalid byte size " + quoted(text) + " (too large)");
  std::string unit(text.substr(i));
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  int shift = 0;
  if (unit.empty() || unit == "b") shift = 0;
  else if (unit == "k" || unit == "kb" || unit == "kib") shift = 10;
  else if (unit == "m" || unit == "mb" || unit == "mib") shift = 20;
  else if (unit == "g" || unit == "gb" || unit == "gib") shift = 30;
  else if (unit == "t" || unit == "tb" || unit == "tib") shift = 40;
  else throw NumberError("invalid byte size " + quoted(text) + " (unknown unit '" + std::string(text.substr(i)) + "')");
  if (number > (kMax >> shift)) throw NumberError("invalid byte size " + quoted(text) + " (too large)");
  return number << shift;
}

double parse_fraction(std::string_view text, double max_fraction) {
  const bool percent = !text.empty() && text.back() == '%';
  try {
    return percent ? parse_real(text.substr(0, text.size() - 1), 0, max_fraction * 100) / 100 : parse_real(text, 0, max_fraction);
  } catch (const NumberError&) {
    throw NumberError("invalid fraction " + quoted(text) + " (expected e.g. 5% or 0.05, from 0 to " +
                      number_text(max_fraction * 100) + "%)");
  }
}

}  // namespace memlens
