// im2col/col2im and pooling over contiguous [N, C, H, W]. The reverse passes (col2im,
// avg_pool's backward) gather: each input element sums the windows that cover it, so
// nothing is added atomically and results are reproducible. Max pooling's backward adds
// atomically, since windows overlapping at one argmax is data dependent.
#include "device_types.cuh"
#include "launch.hpp"

namespace memlens::cuda {

namespace {

// Output positions (oy or ox) of windows that cover input coordinate y through tap i,
// with `pad` before the first.
__device__ inline bool window_at(std::int64_t y, std::int64_t i, std::int64_t pad, const Window& g, std::int64_t out,
                                 std::int64_t& o) {
  const std::int64_t pos = y + pad - i * g.dilation;
  if (pos < 0 || pos % g.stride != 0) return false;
  o = pos / g.stride;
  return o < out;
}

// The sum of term(i, j, oy, ox) over the taps (i, j) of every window (oy, ox) covering
// input element e: what the reverse passes gather.
template <class C, class Term>
__device__ inline C sum_over_windows(std::int64_t e, const Window& g, Term term) {
  const std::int64_t xx = e % g.w, y = (e / g.w) % g.h;
  C sum = 0;
  for (std::int64_t i = 0; i < g.kh; ++i) {
    std::int64_t oy;
    if (!window_at(y, i, g.ph, g, g.oh, oy)) continue;
    for (std::int64_t j = 0; j < g.kw; ++j) {
      std::int64_t ox;
      if (window_at(xx, j, g.pw, g, g.ow, ox)) sum += term(i, j, oy, ox);
    }
  }
  return sum;
}

template <class S>
__global__ void im2col_kernel(S* cols, const S* x, Window g, std::int64_t n) {
  const std::int64_t len = g.oh * g.ow, taps = g.kh * g.kw;
  for (std::int64_t e = global_index(); e < n; e += grid_stride()) {
    const std::int64_t o = e % len, tap = (e / len) % taps, plane = e / (len * taps);
    const std::int64_t iy = g.in_y(o / g.ow, tap / g.kw), ix = g.in_x(o % g.ow, tap % g.kw);
    const bool inside = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
    cols[e] = inside ? x[plane * g.h * g.w + iy * g.w + ix] : to_storage<S>(0);
  }
}

template <class S>
__global__ void col2im_kernel(S* x, const S* cols, Window g, std::int64_t n) {
  const std::int64_t len = g.oh * g.ow, taps = g.kh * g.kw;
  for (std::int64_t e = global_index(); e < n; e += grid_stride()) {
    const std::int64_t plane = e / (g.h * g.w);
    x[e] =
        to_storage<S>(sum_over_windows<compute_t<S>>(e, g, [&](std::int64_t i, std::int64_t j, std::int64_t oy, std::int64_t ox) {
          return load(cols + (plane * taps + i * g.kw + j) * len + oy * g.ow + ox);
        }));
  }
}

// The first largest of each window; a NaN replaces it, as the host's scan does.
template <class S>
__global__ void max_pool_kernel(S* out, std::int64_t* indices, const S* x, Window g, std::int64_t n) {
  const std::int64_t len = g.oh * g.ow;
  for (std::int64_t e = global_index(); e < n; e += grid_stride()) {
    const std::int64_t o = e % len, plane = e / len;
    const S* src = x + plane * g.h * g.w;
    compute_t<S> best = 0;
    std::int64_t at = -1;
    for (std::int64_t i = 0; i < g.kh; ++i)
      for (std::int64_t j = 0; j < g.kw; ++j) {
        const std::int64_t iy = g.in_y(o / g.ow, i), ix = g.in_x(o % g.ow, j);
        if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
        const compute_t<S> v = load(src + iy * g.w + ix);
        if (at < 0 || v > best || v != v) best = v, at = iy * g.w + ix;
      }
    out[e] = to_storage<S>(best);
    indices[e] = at;
  }
}

template <class S>
__global__ void max_pool_backward_kernel(S* gx, const S* grad, const std::int64_t* indices, Window g, std::int64_t n) {
  const std::int64_t len = g.oh * g.ow;
  for (std::int64_t e = global_index(); e < n; e += grid_stride())
    if (indices[e] >= 0) atomic_add(gx + (e / len) * g.h * g.w + indices[e], load(grad + e));
}

template <class S>
__global__ void avg_pool_kernel(S* out, const S* x, Window g, bool count_padding, std::int64_t n) {
  const std::int64_t len = g.oh * g.ow;
  for (std::int64_t e = global_index(); e < n; e += grid_stride()) {
    const std::int64_t o = e % len, plane = e / len;
    compute_t<S> sum = 0;
    for (std::int64_t i = 0; i < g.kh; ++i)
      for (std::int64_t j = 0; j < g.kw; ++j) {
        const std::int64_t iy = g.in_y(o / g.ow, i), ix = g.in_x(o % g.ow, j);
        if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) sum += load(x + plane * g.h * g.w + iy * g.w + ix);
      }
    out[e] = to_storage<S>(sum / static_cast<compute_t<S>>(avg_pool_divisor(g, o / g.ow, o % g.ow, count_padding)));
  }
}

template <class S>
__global__ void avg_pool_backward_kernel(S* gx, const S* grad, Window g, bool count_padding, std::int64_t n) {
  const std::int64_t len = g.oh * g.ow;
  for (std::int64_t e = global_index(); e < n; e += grid_stride()) {
    const std::int64_t plane = e / (g.h * g.w);
    gx[e] = to_storage<S>(sum_over_windows<compute_t<S>>(e, g, [&](std::int64_t, std::int64_t, std::int64_t oy, std::int64_t ox) {
      return load(grad + plane * len + oy * g.ow + ox) / static_cast<compute_t<S>>(avg_pool_divisor(g, oy, ox, count_padding));
    }));
  }
}

template <class Launch>
void run(ScalarType t, std::int64_t n, const char* name, Launch&& launch) {
  if (n == 0) return;
  dispatch_floating(t, name, [&](auto tag) { launch(tag, blocks_for(n)); });
  check_launch(name);
}

template <class S>
S* as(const Strided& t) {
  return reinterpret_cast<S*>(t.data);
}

}  // namespace

void im2col(const Strided& cols, const Strided& x, const Window& g, cudaStream_t s) {
  const std::int64_t n = cols.numel();
  run(x.dtype, n, "im2col", [&](auto tag, unsigned blocks) {
    using S = decltype(tag);
    im2col_kernel<S><<<blocks, kThreads, 0, s>>>(as<S>(cols), as<S>(x), g, n);
  });
}

void col2im(const Strided& x, const Strided& cols, const Window& g, cudaStream_t s) {
  const std::int64_t n = x.numel();
  run(x.dtype, n, "col2im", [&](auto tag, unsigned blocks) {
    using S = decltype(tag);
    col2im_kernel<S><<<blocks, kThreads, 0, s>>>(as<S>(x), as<S>(cols), g, n);
  });
}

void max_pool(const Strided& out, std::int64_t* indices, const Strided& x, const Window& g, cudaStream_t s) {
  const std::int64_t n = out.numel();
  run(x.dtype, n, "max_pool", [&](auto tag, unsigned blocks) {
    using S = decltype(tag);
    max_pool_kernel<S><<<blocks, kThreads, 0, s>>>(as<S>(out), indices, as<S>(x), g, n);
  });
}

void max_pool_backward(const Strided& gx, const Strided& grad, const std::int64_t* indices, const Window& g, cudaStream_t s) {
  const std::int64_t n = grad.numel();
  run(gx.dtype, n, "max_pool_backward", [&](auto tag, unsigned blocks) {
    using S = decltype(tag);
    max_pool_backward_kernel<S><<<blocks, kThreads, 0, s>>>(as<S>(gx), as<S>(grad), indices, g, n);
  });
}

void avg_pool(const Strided& out, const Strided& x, const Window& g, bool count_padding, cudaStream_t s) {
  const std::int64_t n = out.numel();
  run(x.dtype, n, "avg_pool", [&](auto tag, unsigned blocks) {
    using S = decltype(tag);
    avg_pool_kernel<S><<<blocks, kThreads, 0, s>>>(as<S>(out), as<S>(x), g, count_padding, n);
  });
}

void avg_pool_backward(const Strided& gx, const Strided& grad, const Window& g, bool count_padding, cudaStream_t s) {
  const std::int64_t n = gx.numel();
  run(gx.dtype, n, "avg_pool_backward", [&](auto tag, unsigned blocks) {
    using S = decltype(tag);
    avg_pool_backward_kernel<S><<<blocks, kThreads, 0, s>>>(as<S>(gx), as<S>(grad), g, count_padding, n);
  });
}

}  // namespace memlens::cuda
