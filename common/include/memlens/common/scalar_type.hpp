#pragma once
// Element types by name and size: tensors have them, and a trace's view events carry them.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace memlens {

// Numbered as traces store them: new types are appended, never inserted.
enum class ScalarType : std::uint8_t { Bool, Int64, Float32, Float64, UInt8, Int32, Float16, BFloat16 };
inline constexpr std::size_t kScalarTypeCount = 8;
static_assert(static_cast<std::size_t>(ScalarType::BFloat16) + 1 == kScalarTypeCount);

inline constexpr ScalarType kBool = ScalarType::Bool;
inline constexpr ScalarType kInt64 = ScalarType::Int64;
inline constexpr ScalarType kLong = ScalarType::Int64;
inline constexpr ScalarType kFloat32 = ScalarType::Float32;
inline constexpr ScalarType kFloat = ScalarType::Float32;
inline constexpr ScalarType kFloat64 = ScalarType::Float64;
inline constexpr ScalarType kDouble = ScalarType::Float64;
inline constexpr ScalarType kUInt8 = ScalarType::UInt8;
inline constexpr ScalarType kByte = ScalarType::UInt8;
inline constexpr ScalarType kInt32 = ScalarType::Int32;
inline constexpr ScalarType kInt = ScalarType::Int32;
inline constexpr ScalarType kFloat16 = ScalarType::Float16;
inline constexpr ScalarType kHalf = ScalarType::Float16;
inline constexpr ScalarType kBFloat16 = ScalarType::BFloat16;

std::size_t element_size(ScalarType t);
// PyTorch's spelling: "float", "double", "long int", "bool" (as in its error texts).
std::string_view type_name(ScalarType t);
// "torch.float32" style, as printed in tensor reprs.
std::string_view dtype_repr(ScalarType t);
inline bool is_floating_point(ScalarType t) { return t == kFloat32 || t == kFloat64 || t == kFloat16 || t == kBFloat16; }

}  // namespace memlens
