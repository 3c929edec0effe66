#pragma once
// The 16-bit floating types, PyTorch's c10::Half (IEEE binary16) and c10::BFloat16 (the
// top half of a float32). Storage is 2 bytes; arithmetic converts to float and rounds the
// result back to nearest-even, which is how PyTorch computes them on CPU.
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace memlens {

namespace half_bits {

constexpr std::uint16_t from_float(float f) {
  const auto x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u, exponent = (x >> 23) & 0xffu;
  std::uint32_t mantissa = x & 0x7fffffu;
  if (exponent == 0xff) return static_cast<std::uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u : 0));  // inf, nan
  const int e = static_cast<int>(exponent) - 127 + 15;
  if (e >= 0x1f) return static_cast<std::uint16_t>(sign | 0x7c00u);  // too large: inf
  if (e <= 0) {                                                      // a subnormal half, or zero
    if (e < -10) return static_cast<std::uint16_t>(sign);
    mantissa |= 0x800000u;
    const int shift = 14 - e;
    std::uint32_t m = mantissa >> shift, rest = mantissa & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (m & 1))) ++m;
    return static_cast<std::uint16_t>(sign | m);
  }
  std::uint32_t h = sign | (static_cast<std::uint32_t>(e) << 10) | (mantissa >> 13), rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) ++h;  // a carry rounds into the exponent, up to inf
  return static_cast<std::uint16_t>(h);
}

inline float to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    const float v = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

}  // namespace half_bits

namespace bfloat16_bits {

constexpr std::uint16_t from_float(float f) {
  const auto x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t nearest_even = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16, quiet_nan = (x >> 16) | 0x40u;
  // A select, not a branch: loops converting arrays vectorize.
  return static_cast<std::uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? quiet_nan : nearest_even);
}

inline float to_float(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

}  // namespace bfloat16_bits

// Converts from anything that converts to float, and to float.
template <class Bits>
struct Float16Of {
  std::uint16_t bits = 0;
  Float16Of() = default;
  template <class T>
  requires(std::is_convertible_v<T, float> && !std::is_same_v<std::remove_cvref_t<T>, Float16Of>) Float16Of(T v)
      : bits(Bits::from_float(static_cast<float>(v))) {}
  operator float() const { return Bits::to_float(bits); }
  Float16Of& operator+=(float v) { return *this = Float16Of(float(*this) + v); }
  Float16Of& operator-=(float v) { return *this = Float16Of(float(*this) - v); }
  Float16Of& operator*=(float v) { return *this = Float16Of(float(*this) * v); }
  Float16Of& operator/=(float v) { return *this = Float16Of(float(*this) / v); }
};

struct HalfBits {
  static constexpr std::uint16_t from_float(float f) { return half_bits::from_float(f); }
  static float to_float(std::uint16_t h) { return half_bits::to_float(h); }
};
struct BFloat16Bits {
  static constexpr std::uint16_t from_float(float f) { return bfloat16_bits::from_float(f); }
  static float to_float(std::uint16_t b) { return bfloat16_bits::to_float(b); }
};
using Half = Float16Of<HalfBits>;
using BFloat16 = Float16Of<BFloat16Bits>;
static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

// Floating types, the 16-bit ones included (std::is_floating_point_v knows only the built-in ones).
template <class T>
inline constexpr bool is_floating_v = std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

}  // namespace memlens
