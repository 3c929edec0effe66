// Layout copies: a transposed tensor is a view with swapped strides, so reshape() must
// copy it and contiguous() copies it (seed claims 1, 5, 11). By default each step
// transposes, then flattens and makes it contiguous; `memlens contiguity` lists those
// copies by site and bytes, after "transpose". `--fixed` keeps the layout: it reads the
// transpose through matmul (BLAS takes it by flag) and flattens the original.
//
//   contiguity [STEPS] [--fixed]
#include <cstdio>

#include <memlens/recorder/recorder.hpp>
#include <memlens/runtime.hpp>

#include "sample_args.hpp"

using namespace memlens;

int main(int argc, char** argv) try {
  auto args = samples::parse_args(argc, argv, 8);
  manual_seed(0);
  Device dev("cuda");
  Tensor x = randn({512, 256}).to(dev);
  Tensor w = randn({512, 64}).to(dev);
  double total = 0;
  for (int step = 0; step < args.count; ++step) {
    if (args.fixed) {
      total += x.reshape({-1}).sum().item<double>();        // a view: x is contiguous
      total += x.t().matmul(w).sum().item<double>();         // the transpose read in place
    } else {
      Tensor xt = x.transpose(0, 1);
      total += xt.reshape({-1}).sum().item<double>();       // copies: xt is not contiguous
      total += xt.contiguous().matmul(w).sum().item<double>();  // copies again
    }
    profiler::step();
  }
  std::printf("contiguity%s: %d steps, checksum %.3f\n", args.fixed ? " --fixed" : "", args.count, total);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "contiguity: error: %s\n", e.what());
  return 1;
}
