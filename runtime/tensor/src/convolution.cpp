// Convolution and pooling over [N, C, H, W]: conv2d as im2col plus one GEMM per image
// (BLAS does the arithmetic), max and average pooling as direct loops. Each records one
// node that keeps what PyTorch's keeps: conv2d its input and weight (the columns are
// rebuilt in backward), max pooling its input and the argmax indices.
#include "memlens/tensor/nn_functional.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "autocast.hpp"
#include "memlens/tensor/autograd.hpp"
#include "tensor_internal.hpp"

namespace memlens::nn::functional {

using autograd::Node;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

namespace {

using detail::gpu;
using detail::on_gpu;
using detail::Window;

// What a window pass asks for, before the input's size gives its geometry.
struct WindowSpec {
  std::int64_t kh, kw, stride = 1, padding = 0, dilation = 1;
  bool same = false;       // padding='same': the output as large as the input
  bool ceil_mode = false;  // a last partial window counts (pooling)
};

// Output length along one dim of `in` elements, `begin` zeros before and `total` in all,
// a window spanning `span`: PyTorch's floor rule, or its ceiling rule, where a last
// window must still start inside the input or the padding before it.
std::int64_t out_length(std::int64_t in, std::int64_t begin, std::int64_t total, std::int64_t span, std::int64_t stride,
                        bool ceil_mode) {
  const std::int64_t room = in + total - span;
  if (room < 0) return 0;
  std::int64_t out = (ceil_mode ? room + stride - 1 : room) / stride + 1;
  if (ceil_mode && (out - 1) * stride >= in + begin) --out;
  return out;
}

Window window(const Tensor& x, const WindowSpec& s, const char* op) {
  if (x.dim() != 4)
    throw ShapeError(std::string("Expected 3D (unbatched) or 4D (batched) input to ") + op +
                     ", but got input of size: " + shape_str(x.sizes()));
  if (!x.is_floating_point()) throw TypeError(std::string(op) + " is not implemented for " + std::string(type_name(x.dtype())));
  if (s.stride < 1 || s.padding < 0) throw ShapeError(std::string(op) + ": stride must be positive and padding non-negative");
  if (s.dilation < 1) throw ShapeError(std::string(op) + ": dilation should be greater than zero");
  const std::int64_t span_h = s.dilation * (s.kh - 1) + 1, span_w = s.dilation * (s.kw - 1) + 1;
  // 'same' pads span - 1 in all, half before (rounded down) and the rest after, as PyTorch.
  const std::int64_t total_h = s.same ? span_h - 1 : 2 * s.padding, total_w = s.same ? span_w - 1 : 2 * s.padding;
  const std::int64_t ph = s.same ? total_h / 2 : s.padding, pw = s.same ? total_w / 2 : s.padding;
  Window g{x.size(0), x.size(1), x.size(2), x.size(3), s.kh, s.kw, s.stride, ph, pw, s.dilation, 0, 0};
  g.oh = out_length(g.h, g.ph, total_h, span_h, s.stride, s.ceil_mode);
  g.ow = out_length(g.w, g.pw, total_w, span_w, s.stride, s.ceil_mode);
  if (g.oh < 1 || g.ow < 1)
    throw ShapeError(std::string(op) + ": calculated output size: (" + std::to_string(g.c) + "x" +
                     std::to_string((g.h + total_h - span_h) / s.stride + 1) + "x" +
                     std::to_string((g.w + total_w - span_w) / s.stride + 1) + "). Output size is too small");
  return g;
}

// Visits every (output position, kernel tap) of channel plane `c`: f(out_index, tap, in_index or -1 in padding).
template <class F>
void taps(const Window& g, F&& f) {
  for (std::int64_t i = 0; i < g.kh; ++i)
    for (std::int64_t j = 0; j < g.kw; ++j)
      for (std::int64_t oy = 0; oy < g.oh; ++oy) {
        std::int64_t iy = g.in_y(oy, i);
        for (std::int64_t ox = 0; ox < g.ow; ++ox) {
          std::int64_t ix = g.in_x(ox, j);
          bool inside = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
          f(oy * g.ow + ox, i * g.kw + j, inside ? iy * g.w + ix : -1);
        }
      }
}

// [N, C*kh*kw, oh*ow]: each output position's receptive field as a column.
Tensor im2col(const Tensor& x, const Window& g) {
  Tensor xc = x.is_contiguous() ? x : detail::layout_copy(x, instrument::CopyReason::OpInternal);
  Tensor cols = detail::make_tensor({g.n, g.c * g.kh * g.kw, g.out_len()}, x.dtype(), x.device());
  if (on_gpu(cols)) {
    gpu().im2col(cols, xc, g);
    return cols;
  }
  detail::dispatch(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(xc.raw_data());
    T* out = static_cast<T*>(cols.raw_data());
    const std::int64_t taps_n = g.kh * g.kw, len = g.out_len();
    for (std::int64_t plane = 0; plane < g.n * g.c; ++plane) {
      const T* src = in + plane * g.h * g.w;
      T* dst = out + plane * taps_n * len;  // plane = n * C + c: rows c*taps.. of image n
      taps(g, [&](std::int64_t o, std::int64_t tap, std::int64_t at) { dst[tap * len + o] = at < 0 ? T(0) : src[at]; });
    }
  });
  return cols;
}

// The reverse: every column entry added back to the input position it came from.
Tensor col2im(const Tensor& cols, const Window& g) {
  Tensor x = zeros({g.n, g.c, g.h, g.w}, TensorOptions().dtype(cols.dtype()).device(cols.device()));
  Tensor cc = cols.is_contiguous() ? cols : detail::layout_copy(cols, instrument::CopyReason::OpInternal);
  if (on_gpu(x)) {
    gpu().col2im(x, cc, g);
    return x;
  }
  detail::dispatch(cols.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(cc.raw_data());
    T* out = static_cast<T*>(x.raw_data());
    const std::int64_t taps_n = g.kh * g.kw, len = g.out_len();
    for (std::int64_t plane = 0; plane < g.n * g.c; ++plane) {
      const T* src = in + plane * taps_n * len;
      T* dst = out + plane * g.h * g.w;
      taps(g, [&](std::int64_t o, std::int64_t tap, std::int64_t at) {
        if (at >= 0) dst[at] += src[tap * len + o];
      });
    }
  });
  return x;
}

// A [C, H, W] input is one image, as PyTorch takes it: op on a batch of one, the result
// without its batch dim. nullopt for any other rank (op then checks it).
template <class Op>
std::optional<Tensor> as_unbatched(const Tensor& x, Op&& op) {
  if (x.dim() != 3) return std::nullopt;
  return op(x.unsqueeze(0)).squeeze(0);
}

}  // namespace

Conv2dPadding::Conv2dPadding(std::string_view mode) : same(mode == "same") {
  if (mode != "same" && mode != "valid") throw Error("Invalid padding string: '" + std::string(mode) + "'");
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, std::int64_t stride, Conv2dPadding padding,
              std::int64_t dilation, std::int64_t groups) {
  MEMLENS_API_ENTRY();
  if (auto r = autocast::run(
          "conv2d",
          [&](const Tensor& xl, const Tensor& wl, const Tensor& bl) {
            return conv2d(xl, wl, bl, stride, padding, dilation, groups);
          },
          x, weight, bias))
    return *r;
  if (auto one = as_unbatched(x, [&](const Tensor& b) { return conv2d(b, weight, bias, stride, padding, dilation, groups); }))
    return *one;
  if (weight.dim() != 4)
    throw ShapeError("conv2d: weight must be [out_channels, in_channels / groups, kh, kw], got " + shape_str(weight.sizes()));
  if (groups < 1) throw ShapeError("non-positive groups is not supported");
  if (padding.same && stride != 1) throw Error("padding='same' is not supported for strided convolutions");
  const Window g = window(x, {weight.size(2), weight.size(3), stride, padding.zeros, dilation, padding.same, false}, "conv2d");
  const std::int64_t out_c = weight.size(0);
  if (out_c % groups != 0)
    throw ShapeError("Given groups=" + std::to_string(groups) + ", expected weight to be divisible by " + std::to_string(groups) +
                     " at dimension 0, but got weight of size " + shape_str(weight.sizes()) + " instead");
  if (x.size(1) != weight.size(1) * groups)
    throw ShapeError("Given groups=" + std::to_string(groups) + ", weight of size " + shape_str(weight.sizes()) +
                     ", expected input" + shape_str(x.sizes()) + " to have " + std::to_string(weight.size(1) * groups) +
                     " channels, but got " + std::to_string(x.size(1)) + " channels instead");
  if (x.dtype() != weight.dtype()) throw TypeError("conv2d: input and weight must have the same dtype");
  if (bias.defined() && bias.sizes() != Shape{out_c}) throw ShapeError("conv2d: bias must be [" + std::to_string(out_c) + "]");
  // Each group is a GEMM of its filters [out_c / groups, rows] with its own rows of the
  // columns: weight [groups, out_c / groups, rows] against columns [N, groups, rows, L].
  const std::int64_t rows = weight.size(1) * g.kh * g.kw, group_out = out_c / groups;
  Tensor out;
  {
    NoGradGuard no_grad;
    Tensor cols = im2col(x, g).view({g.n, groups, rows, g.out_len()});
    // 16-bit: the bias is added to the float32 sums, then rounded once (detail::rounded).
    out = detail::batched_matmul(weight.reshape({groups, group_out, rows}), cols, {}, bias.defined())
              .view({g.n, out_c, g.oh, g.ow});
    if (bias.defined()) out = detail::rounded(out.add_(bias.view({1, out_c, 1, 1})), x.dtype());
  }
  std::vector<Tensor> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  autograd::record(out, "ConvolutionBackward0", inputs,
                   [sx = SavedTensor(x), sw = SavedTensor(weight), g, rows, groups, group_out, has_bias = bias.defined()](
                       const Tensor& grad, const Node& n) {
                     Tensor xv = sx.unpack(n), wv = sw.unpack(n);
                     Tensor gy = grad.reshape({g.n, groups, group_out, g.out_len()});
                     Grads grads(has_bias ? 3 : 2);
                     if (n.needs_input_grad(0))
                       grads[0] = col2im(detail::batched_matmul(wv.reshape({groups, group_out, rows}).transpose(1, 2), gy)
                                             .view({g.n, groups * rows, g.out_len()}),
                                         g);
                     if (n.needs_input_grad(1))
                       grads[1] = detail::batched_matmul(gy, im2col(xv, g).view({g.n, groups, rows, g.out_len()}).transpose(2, 3))
                                      .sum({0})
                                      .view(wv.sizes());
                     if (has_bias && n.needs_input_grad(2)) grads[2] = grad.sum({0, 2, 3});
                     return grads;
                   });
  return out;
}

namespace {

// Calls f(plane, src, dst) for each of `planes` channel planes: src in `from` (planes of
// from_plane elements), dst in `to` (planes of to_plane), both of from's float type.
template <class F>
void for_each_plane(const Tensor& from, std::int64_t from_plane, const Tensor& to, std::int64_t to_plane, std::int64_t planes,
                    F&& f) {
  detail::dispatch(from.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(from.raw_data());
    T* out = static_cast<T*>(to.raw_data());
    for (std::int64_t p = 0; p < planes; ++p) f(p, in + p * from_plane, out + p * to_plane);
  });
}

// A pooling pass's window (stride 0: the kernel), checked as PyTorch checks it.
Window pool_window(const Tensor& x, std::int64_t kernel, std::int64_t stride, std::int64_t padding, bool ceil_mode,
                   const char* op) {
  if (padding * 2 > kernel) throw ShapeError(std::string(op) + ": pad should be at most half of effective kernel size");
  return window(x, {kernel, kernel, stride == 0 ? kernel : stride, padding, 1, false, ceil_mode}, op);
}

Tensor contiguous_input(const Tensor& x) {
  return x.is_contiguous() ? x : detail::layout_copy(x, instrument::CopyReason::OpInternal);
}

// Each output position's avg-pool divisor (the same in every plane), for the host loops.
std::vector<double> avg_pool_divisors(const Window& g, bool count_padding) {
  std::vector<double> d(static_cast<std::size_t>(g.out_len()));
  for (std::int64_t k = 0; k < g.out_len(); ++k)
    d[static_cast<std::size_t>(k)] = static_cast<double>(detail::avg_pool_divisor(g, k / g.ow, k % g.ow, count_padding));
  return d;
}

Tensor zeros_like_input(const Window& g, const Tensor& like) {
  return zeros({g.n, g.c, g.h, g.w}, TensorOptions().dtype(like.dtype()).device(like.device()));
}

}  // namespace

Tensor max_pool2d(const Tensor& x, std::int64_t kernel, std::int64_t stride, std::int64_t padding, bool ceil_mode) {
  MEMLENS_API_ENTRY();
  if (auto one = as_unbatched(x, [&](const Tensor& b) { return max_pool2d(b, kernel, stride, padding, ceil_mode); })) return *one;
  const Window g = pool_window(x, kernel, stride, padding, ceil_mode, "max_pool2d");
  const std::int64_t len = g.out_len(), planes = g.n * g.c;
  detail::OpTrace trace;
  Tensor out = detail::make_tensor({g.n, g.c, g.oh, g.ow}, x.dtype(), x.device());
  Tensor indices = detail::make_tensor({g.n, g.c, g.oh, g.ow}, kInt64, x.device());
  auto* idx = static_cast<std::int64_t*>(indices.raw_data());
  if (on_gpu(out)) gpu().max_pool(out, indices, contiguous_input(x), g);
  else
    for_each_plane(contiguous_input(x), g.h * g.w, out, len, planes, [&](std::int64_t p, const auto* src, auto* dst) {
      std::int64_t* ip = idx + p * len;
      std::fill(ip, ip + len, -1);
      taps(g, [&](std::int64_t k, std::int64_t, std::int64_t at) {  // the first largest; NaN wins, as in PyTorch
        if (at >= 0 && (ip[k] < 0 || src[at] > dst[k] || src[at] != src[at])) dst[k] = src[at], ip[k] = at;
      });
    });
  trace.done("max_pool2d", {&x}, out);
  autograd::record(out, "MaxPool2DWithIndicesBackward0", {x}, [si = SavedTensor(indices), g](const Tensor& grad, const Node& n) {
    Tensor gx = zeros_like_input(g, grad), iv = si.unpack(n);
    if (on_gpu(gx)) {
      gpu().max_pool_backward(gx, grad.contiguous(), iv, g);
      return Grads{gx};
    }
    const auto* idx = static_cast<const std::int64_t*>(iv.raw_data());
    const std::int64_t len = g.out_len();
    for_each_plane(grad.contiguous(), len, gx, g.h * g.w, g.n * g.c, [&](std::int64_t p, const auto* src, auto* dst) {
      for (std::int64_t k = 0; k < len; ++k)
        if (idx[p * len + k] >= 0) dst[idx[p * len + k]] += src[k];
    });
    return Grads{gx};
  });
  return out;
}

Tensor avg_pool2d(const Tensor& x, std::int64_t kernel, std::int64_t stride, std::int64_t padding, bool ceil_mode,
                  bool count_include_pad) {
  MEMLENS_API_ENTRY();
  if (auto one =
          as_unbatched(x, [&](const Tensor& b) { return avg_pool2d(b, kernel, stride, padding, ceil_mode, count_include_pad); }))
    return *one;
  const Window g = pool_window(x, kernel, stride, padding, ceil_mode, "avg_pool2d");
  detail::OpTrace trace;
  Tensor out = zeros({g.n, g.c, g.oh, g.ow}, TensorOptions().dtype(x.dtype()).device(x.device()));
  if (on_gpu(out)) gpu().avg_pool(out, contiguous_input(x), g, count_include_pad);
  else {
    const std::vector<double> divisor = avg_pool_divisors(g, count_include_pad);
    std::vector<double> sums(static_cast<std::size_t>(g.out_len()));  // one buffer for every plane
    for_each_plane(contiguous_input(x), g.h * g.w, out, g.out_len(), g.n * g.c, [&](std::int64_t, const auto* src, auto* dst) {
      using T = std::remove_reference_t<decltype(*dst)>;
      // Summed in the compute type (16-bit types in float; each sum rounded to it, so the
      // double buffer adds nothing), then divided, as PyTorch's kernel.
      using Sum = std::conditional_t<std::is_same_v<T, double>, double, float>;
      std::fill(sums.begin(), sums.end(), 0.0);
      taps(g, [&](std::int64_t k, std::int64_t, std::int64_t at) {
        if (at >= 0)
          sums[static_cast<std::size_t>(k)] = static_cast<Sum>(static_cast<Sum>(sums[static_cast<std::size_t>(k)]) + src[at]);
      });
      for (std::size_t k = 0; k < sums.size(); ++k) dst[k] = static_cast<T>(static_cast<Sum>(sums[k]) / divisor[k]);
    });
  }
  trace.done("avg_pool2d", {&x}, out);
  autograd::record(out, "AvgPool2DBackward0", {x}, [g, count_include_pad](const Tensor& grad, const Node&) {
    Tensor gx = zeros_like_input(g, grad);
    if (on_gpu(gx)) {
      gpu().avg_pool_backward(gx, grad.contiguous(), g, count_include_pad);
      return Grads{gx};
    }
    const std::vector<double> divisor = avg_pool_divisors(g, count_include_pad);
    for_each_plane(grad.contiguous(), g.out_len(), gx, g.h * g.w, g.n * g.c, [&](std::int64_t, const auto* src, auto* dst) {
      using T = std::remove_reference_t<decltype(*dst)>;
      taps(g, [&](std::int64_t k, std::int64_t, std::int64_t at) {
        if (at >= 0) dst[at] += static_cast<T>(src[k] / divisor[static_cast<std::size_t>(k)]);
      });
    });
    return Grads{gx};
  });
  return out;
}

}  // namespace memlens::nn::functional
