#pragma once
// Plain arguments of the GPU kernels that both sides of gpu_kernels.hpp read: the op files
// (with tensors) and the CUDA kernels (without them).
#include <cstdint>

#if defined(__CUDACC__)
#define MEMLENS_WINDOW_HD __host__ __device__
#else
#define MEMLENS_WINDOW_HD
#endif

namespace memlens::detail {

// A scalar operand already converted to the kernel's element type on the host (so the
// 16-bit types round it as the host does), held exactly as a double or an int64.
struct ScalarBits {
  double d = 0;
  std::int64_t i = 0;
};

// One 2-D window pass over [N, C, H, W] (convolution's im2col, pooling). ph and pw are
// the padding before the first row and column (padding='same' may pad less before than
// after); taps are `dilation` apart.
struct Window {
  std::int64_t n, c, h, w;  // input
  std::int64_t kh, kw, stride, ph, pw, dilation;
  std::int64_t oh, ow;  // output
  MEMLENS_WINDOW_HD std::int64_t out_len() const { return oh * ow; }
  // The input row (column) that output row oy (column ox) reads through tap i (j); outside
  // [0, h) ([0, w)) it is padding.
  MEMLENS_WINDOW_HD std::int64_t in_y(std::int64_t oy, std::int64_t i) const { return oy * stride - ph + i * dilation; }
  MEMLENS_WINDOW_HD std::int64_t in_x(std::int64_t ox, std::int64_t j) const { return ox * stride - pw + j * dilation; }
};

// What average pooling divides window (oy, ox)'s sum by, as PyTorch: the window clipped
// to the padded input, or (count_padding false) to the input itself.
MEMLENS_WINDOW_HD inline std::int64_t avg_pool_divisor(const Window& g, std::int64_t oy, std::int64_t ox, bool count_padding) {
  // Plain comparisons rather than std::min/max: this runs in device code too.
  std::int64_t y0 = g.in_y(oy, 0), x0 = g.in_x(ox, 0), y1 = y0 + g.kh, x1 = x0 + g.kw;
  if (y1 > g.h + g.ph) y1 = g.h + g.ph;
  if (x1 > g.w + g.pw) x1 = g.w + g.pw;
  if (!count_padding) {
    if (y0 < 0) y0 = 0;
    if (x0 < 0) x0 = 0;
    if (y1 > g.h) y1 = g.h;
    if (x1 > g.w) x1 = g.w;
  }
  return (y1 - y0) * (x1 - x0);
}

enum class Distribution : std::uint8_t { Uniform, Normal, Bernoulli, Integers };

}  // namespace memlens::detail
