#pragma once
// Host loops over the rows of a contiguous tensor, for the ops PyTorch computes in one
// fused kernel: softmax, log_softmax and layer_norm. Each reads a row of its input in the
// op's compute type (float32 for the 16-bit types: detail::opmath's rule), computes there
// and rounds once, at its output, without the full-size temporaries that the same op
// built of elementwise steps makes. On a GPU the ops run as those steps (gpu_kernels.hpp
// has no row kernels).
#include <cstdint>

#include "memlens/tensor/tensor.hpp"

namespace memlens::detail {

// Whether x's rows can go through these loops: x on the host, contiguous, floating and
// of at least one dim.
bool host_rows(const Tensor& x);
// out (contiguous, x's shape and dtype) = softmax, or log_softmax, of each row of x's last dim.
void softmax_rows(const Tensor& out, const Tensor& x, bool log);
// layer_norm over rows of `len` elements: out (contiguous, x's shape and dtype) =
// (x - mean) * rstd * w + b, w and b undefined or `len` elements of the compute type;
// mean and rstd (one per row, contiguous, the compute type) written for backward.
void layer_norm_rows(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& x, const Tensor& w, const Tensor& b,
                     std::int64_t len, double eps);

}  // namespace memlens::detail
