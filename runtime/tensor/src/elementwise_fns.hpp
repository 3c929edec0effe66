#pragma once
// The elementwise functions, named once and shared by both backends: the host loops of
// elementwise.cpp call them on each element, and the CUDA kernels (cuda/elementwise.cu)
// call the same structs in device code, so a function means the same on every device.
// Each is called with its compute type (the 16-bit types are Half/BFloat16 on the host,
// float on the GPU: both compute in float and round the result back) and returns what the
// host lambda it replaced returned; the caller casts to the output type.
#include <cmath>
#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define MEMLENS_HD __host__ __device__
#else
#define MEMLENS_HD
#endif

namespace memlens::fn {

// Functions with parameters (a scaled add's alpha, a clamp's bounds) carry them here,
// so a GPU launch can rebuild the function from its id and these two numbers.
struct Params {
  double a = 0, b = 0;
};

// Math that means the host's std:: function on the host and CUDA's on the device; other
// types than float and double compute in float (16-bit) or double (integers), as
// std::exp(int) does.
#if defined(__CUDA_ARCH__)
#define MEMLENS_FN_CALL(name) ::name
#define MEMLENS_FN_CALL_FLOAT(name) ::name##f
#else
#define MEMLENS_FN_CALL(name) std::name
#define MEMLENS_FN_CALL_FLOAT(name) std::name
#endif
#define MEMLENS_FN_MATH(name)                                                      \
  MEMLENS_HD inline float name(float x) { return MEMLENS_FN_CALL_FLOAT(name)(x); } \
  MEMLENS_HD inline double name(double x) { return MEMLENS_FN_CALL(name)(x); }
#define MEMLENS_FN_MATH_ANY(name)                                             \
  MEMLENS_FN_MATH(name)                                                       \
  template <class T>                                                          \
  MEMLENS_HD inline auto name(T x) {                                          \
    if constexpr (std::is_integral_v<T>) return name(static_cast<double>(x)); \
    else return name(static_cast<float>(x));                                  \
  }
namespace math {
MEMLENS_FN_MATH_ANY(exp)
MEMLENS_FN_MATH_ANY(log)
MEMLENS_FN_MATH_ANY(sqrt)
MEMLENS_FN_MATH_ANY(erf)
MEMLENS_FN_MATH_ANY(sin)
MEMLENS_FN_MATH_ANY(cos)
MEMLENS_FN_MATH_ANY(tanh)
MEMLENS_HD inline double floor(double x) { return MEMLENS_FN_CALL(floor)(x); }
MEMLENS_HD inline double ceil(double x) { return MEMLENS_FN_CALL(ceil)(x); }
// Half to even, as PyTorch's round.
MEMLENS_HD inline double round_even(double x) { return MEMLENS_FN_CALL(nearbyint)(x); }
MEMLENS_HD inline double pow(double x, double y) { return MEMLENS_FN_CALL(pow)(x, y); }
}  // namespace math
#undef MEMLENS_FN_MATH_ANY
#undef MEMLENS_FN_MATH
#undef MEMLENS_FN_CALL_FLOAT
#undef MEMLENS_FN_CALL

// Whether u is below zero (never, for unsigned types: no comparison the compiler flags).
template <class T>
MEMLENS_HD bool negative(T u) {
  if constexpr (std::is_unsigned_v<T> || std::is_same_v<T, bool>) return false;
  else return u < T(0);
}

// Every function's id, for the GPU's switch from id to kernel.
// (clang-format cannot settle on a layout for these lists.)
// clang-format off
#define MEMLENS_UNARY_FNS(X) \
  X(Neg) X(Exp) X(Log) X(Sqrt) X(Abs) X(Relu) X(Erf) X(Sin) X(Cos) X(Floor) X(Ceil) X(Round) X(Sigmoid) X(Tanh) X(Clamp) X(Sign)
#define MEMLENS_BINARY_FNS(X) \
  X(Add) X(AddScaled) X(Sub) X(SubScaled) X(Mul) X(Div) X(Pow) X(Maximum) X(Minimum) X(ThresholdBackward) X(Eq) \
  X(Ne) X(Lt) X(Le) X(Gt) X(Ge) X(LogicalAnd) X(LogicalOr)
// clang-format on
#define MEMLENS_FN_ID(name) name,
enum class UnaryId : std::uint8_t { MEMLENS_UNARY_FNS(MEMLENS_FN_ID) };
enum class BinaryId : std::uint8_t { MEMLENS_BINARY_FNS(MEMLENS_FN_ID) };
#undef MEMLENS_FN_ID

#define MEMLENS_UNARY(name, expr)                \
  struct name {                                  \
    static constexpr UnaryId id = UnaryId::name; \
    template <class T>                           \
    MEMLENS_HD auto operator()(T u) const {      \
      return expr;                               \
    }                                            \
  };
#define MEMLENS_BINARY(name, expr)                 \
  struct name {                                    \
    static constexpr BinaryId id = BinaryId::name; \
    template <class T>                             \
    MEMLENS_HD auto operator()(T u, T v) const {   \
      return expr;                                 \
    }                                              \
  };

MEMLENS_UNARY(Neg, -u)
MEMLENS_UNARY(Exp, math::exp(u))
MEMLENS_UNARY(Log, math::log(u))
MEMLENS_UNARY(Sqrt, math::sqrt(u))
MEMLENS_UNARY(Abs, negative(u) ? T(-u) : u)
MEMLENS_UNARY(Relu, u > T(0) ? u : T(0))
MEMLENS_UNARY(Erf, math::erf(u))
MEMLENS_UNARY(Sin, math::sin(u))
MEMLENS_UNARY(Cos, math::cos(u))
MEMLENS_UNARY(Floor, math::floor(static_cast<double>(u)))
MEMLENS_UNARY(Ceil, math::ceil(static_cast<double>(u)))
MEMLENS_UNARY(Round, math::round_even(static_cast<double>(u)))
MEMLENS_UNARY(Sigmoid, 1 / (1 + math::exp(-u)))
MEMLENS_UNARY(Tanh, math::tanh(u))
MEMLENS_UNARY(Sign, (u > T(0)) - negative(u))

// Clamped to [p.a, p.b] (either may be infinite).
struct Clamp {
  static constexpr UnaryId id = UnaryId::Clamp;
  Params p;
  template <class T>
  MEMLENS_HD T operator()(T u) const {
    const double v = static_cast<double>(u);
    return v < p.a ? static_cast<T>(p.a) : v > p.b ? static_cast<T>(p.b) : u;
  }
};

MEMLENS_BINARY(Add, u + v)
MEMLENS_BINARY(Sub, u - v)
MEMLENS_BINARY(Mul, u* v)
MEMLENS_BINARY(Div, u / v)
MEMLENS_BINARY(Pow, static_cast<T>(math::pow(static_cast<double>(u), static_cast<double>(v))))
// NaN wins.
MEMLENS_BINARY(Maximum, u != u || u > v ? u : v)
MEMLENS_BINARY(Minimum, u != u || u < v ? u : v)
// ReLU's backward: the gradient u where the output v is positive (PyTorch's threshold_backward).
MEMLENS_BINARY(ThresholdBackward, v > T(0) ? u : T(0))
MEMLENS_BINARY(Eq, u == v)
MEMLENS_BINARY(Ne, u != v)
MEMLENS_BINARY(Lt, u < v)
MEMLENS_BINARY(Le, u <= v)
MEMLENS_BINARY(Gt, u > v)
MEMLENS_BINARY(Ge, u >= v)
MEMLENS_BINARY(LogicalAnd, u != T(0) && v != T(0))
MEMLENS_BINARY(LogicalOr, u != T(0) || v != T(0))

// u + p.a * v and u - p.a * v, the product taken in double as PyTorch's alpha is.
struct AddScaled {
  static constexpr BinaryId id = BinaryId::AddScaled;
  Params p;
  template <class T>
  MEMLENS_HD auto operator()(T u, T v) const {
    return u + static_cast<T>(p.a * static_cast<double>(v));
  }
};
struct SubScaled {
  static constexpr BinaryId id = BinaryId::SubScaled;
  Params p;
  template <class T>
  MEMLENS_HD auto operator()(T u, T v) const {
    return u - static_cast<T>(p.a * static_cast<double>(v));
  }
};

#undef MEMLENS_UNARY
#undef MEMLENS_BINARY

// The parameters a function carries (none for most).
template <class F>
Params params_of(const F& f) {
  if constexpr (requires { f.p; }) return f.p;
  else return {};
}

// Comparisons and logic give bool whatever they compare.
constexpr bool gives_bool(BinaryId id) {
  return id == BinaryId::Eq || id == BinaryId::Ne || id == BinaryId::Lt || id == BinaryId::Le || id == BinaryId::Gt ||
         id == BinaryId::Ge || id == BinaryId::LogicalAnd || id == BinaryId::LogicalOr;
}

}  // namespace memlens::fn
