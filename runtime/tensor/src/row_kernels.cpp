#include "row_kernels.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "gpu_kernels.hpp"
#include "tensor_internal.hpp"
#include "vector_clones.hpp"

namespace memlens::detail {

namespace {

// Calls f(T{}, C{}): T the storage type of the floating dtype t, C its compute type.
template <class F>
void dispatch_rows(ScalarType t, F&& f) {
  dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_floating_v<T>) f(T{}, std::conditional_t<std::is_same_v<T, double>, double, float>{});
  });
}

// e^x for x <= 0 or NaN (softmax's shifted inputs) in float: Cephes' polynomial on
// x - n ln 2, scaled by 2^n through the exponent bits, within 2 ulp of std::exp; plain
// arithmetic, with no call per element as std::exp has.
// Below float's normal range (-inf included) it is 0.
inline float exp_nonpositive(float x) {
  const float under = x < -87.3365f ? 0.f : 1.f;  // -inf included
  x = x < -87.3365f ? 0.f : x;
  const float t = x * 1.44269504088896341f + 12582912.f;  // 1.5 * 2^23: n rounded into the low bits
  const float n = t - 12582912.f;
  const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;  // ln 2 in two parts
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.f;
  const std::uint32_t scale = (std::bit_cast<std::uint32_t>(t) - 0x4B400000u + 127u) << 23;  // unsigned: NaN bits wrap
  return p * std::bit_cast<float>(scale) * under;
}

template <class C>
C exp_shifted(C x) {
  if constexpr (std::is_same_v<C, float>) return exp_nonpositive(x);
  else return std::exp(x);
}

constexpr std::int64_t kLanes = 16;  // independent partial results, for the compiler's vectors

}  // namespace

bool host_rows(const Tensor& x) { return !on_gpu(x) && x.is_contiguous() && x.is_floating_point() && x.dim() > 0; }

// Each kernel in AVX2 too where the CPU has it (vector_clones.hpp); flatten brings the
// type dispatch and the row loops into each version.
#define MEMLENS_ROW_KERNEL MEMLENS_VECTOR_CLONES __attribute__((flatten))

MEMLENS_ROW_KERNEL void softmax_rows(const Tensor& out, const Tensor& x, bool log) {
  const std::int64_t len = x.size(-1), rows = len == 0 ? 0 : x.numel() / len;
  dispatch_rows(x.dtype(), [&](auto ttag, auto ctag) {
    using T = decltype(ttag);
    using C = decltype(ctag);
    const T* in = static_cast<const T*>(x.raw_data());
    T* o = static_cast<T*>(out.raw_data());
    std::vector<C> e(static_cast<std::size_t>(len));
    C* ep = e.data();
    for (std::int64_t r = 0; r < rows; ++r, in += len, o += len) {
      // The row in the compute type first; then whole groups of kLanes into independent
      // lanes (the compiler's vectors), then the rest. Separate passes: each vectorizes.
      for (std::int64_t i = 0; i < len; ++i) ep[i] = static_cast<C>(in[i]);
      const std::int64_t whole = len - len % kLanes;
      C lanes[kLanes];
      for (auto& l : lanes) l = -std::numeric_limits<C>::infinity();
      for (std::int64_t i = 0; i < whole; i += kLanes)
        for (std::int64_t j = 0; j < kLanes; ++j) {
          const C v = ep[i + j];
          // A NaN makes the row NaN, as PyTorch's; | rather than ||, so no branch.
          lanes[j] = ((v > lanes[j]) | (v != v)) ? v : lanes[j];
        }
      C top = lanes[0];
      for (const C l : lanes) top = ((l > top) | (l != l)) ? l : top;
      for (std::int64_t i = whole; i < len; ++i) top = ((ep[i] > top) | (ep[i] != ep[i])) ? ep[i] : top;
      for (std::int64_t i = 0; i < len; ++i) ep[i] = exp_shifted(ep[i] - top);
      C sums[kLanes] = {};
      for (std::int64_t i = 0; i < whole; i += kLanes)
        for (std::int64_t j = 0; j < kLanes; ++j) sums[j] += ep[i + j];
      C sum = 0;
      for (const C part : sums) sum += part;
      for (std::int64_t i = whole; i < len; ++i) sum += ep[i];
      if (log) {
        const C shift = top + std::log(sum);
        for (std::int64_t i = 0; i < len; ++i) o[i] = static_cast<T>(static_cast<C>(in[i]) - shift);
      } else {
        const C scale = 1 / sum;
        for (std::int64_t i = 0; i < len; ++i) o[i] = static_cast<T>(ep[i] * scale);
      }
    }
  });
}

MEMLENS_ROW_KERNEL void layer_norm_rows(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& x,
                                        const Tensor& w, const Tensor& b, std::int64_t len, double eps) {
  const std::int64_t rows = len == 0 ? 0 : x.numel() / len;
  dispatch_rows(x.dtype(), [&](auto ttag, auto ctag) {
    using T = decltype(ttag);
    using C = decltype(ctag);
    const T* in = static_cast<const T*>(x.raw_data());
    T* o = static_cast<T*>(out.raw_data());
    C* mp = static_cast<C*>(mean.raw_data());
    C* rp = static_cast<C*>(rstd.raw_data());
    const C* wp = w.defined() ? static_cast<const C*>(w.raw_data()) : nullptr;
    const C* bp = b.defined() ? static_cast<const C*>(b.raw_data()) : nullptr;
    for (std::int64_t r = 0; r < rows; ++r, in += len, o += len) {
      double sum = 0;
      for (std::int64_t i = 0; i < len; ++i) sum += static_cast<C>(in[i]);
      const C m = static_cast<C>(sum / static_cast<double>(len));
      double squares = 0;  // two passes: the variance of values far from 0 keeps its digits
      for (std::int64_t i = 0; i < len; ++i) {
        const double d = static_cast<double>(static_cast<C>(in[i]) - m);
        squares += d * d;
      }
      const C k = static_cast<C>(1 / std::sqrt(squares / static_cast<double>(len) + eps));
      mp[r] = m, rp[r] = k;
      for (std::int64_t i = 0; i < len; ++i) {
        C y = (static_cast<C>(in[i]) - m) * k;
        if (wp) y *= wp[i];
        if (bp) y += bp[i];
        o[i] = static_cast<T>(y);
      }
    }
  });
}

}  // namespace memlens::detail
