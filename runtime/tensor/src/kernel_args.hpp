#pragma once
// Plain arguments of the GPU kernels that both sides of gpu_kernels.hpp read: the op files
// (with tensors) and the CUDA kernels (without them).
#include <cstdint>

namespace memlens::detail {

// A scalar operand already converted to the kernel's element type on the host (so the
// 16-bit types round it as the host does), held exactly as a double or an int64.
struct ScalarBits {
  double d = 0;
  std::int64_t i = 0;
};

// One 2-D window pass over [N, C, H, W] (convolution's im2col, pooling).
struct Window {
  std::int64_t n, c, h, w;  // input
  std::int64_t kh, kw, stride, padding;
  std::int64_t oh, ow;  // output
  std::int64_t out_len() const { return oh * ow; }
};

enum class Distribution : std::uint8_t { Uniform, Normal, Bernoulli, Integers };

}  // namespace memlens::detail
