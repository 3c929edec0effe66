// The seed's claim 6 is false: `x + y` with x 1000x1000 and y of shape (1) does not
// materialise y; broadcasting reads it through stride 0, and the only allocation is the
// 4 MB output. memlens reports no broadcast there. A real blowup is flagged: pairwise
// differences `a.unsqueeze(1) - b.unsqueeze(0)` build an (N, M, D) tensor to get an
// (N, M) answer. `--fixed` computes the same squared distances as
// -2 a b^T + |a|^2 + |b|^2, never larger than its (N, M) output.
//
//   broadcast_truth [--fixed]
#include <cstdio>

#include <memlens/runtime.hpp>

#include "sample_args.hpp"

using namespace memlens;

int main(int argc, char** argv) try {
  auto args = samples::parse_args(argc, argv, 0);
  manual_seed(0);
  Device dev("cuda");
  Tensor x = rand({1000, 1000}).to(dev);
  Tensor y = rand({1}).to(dev);
  Tensor z = x + y;  // claim 6: one 4 MB allocation, the output
  std::printf("broadcast_truth: x + y is %s, %s\n", shape_str(z.sizes()).c_str(), format_bytes(z.nbytes()).c_str());

  Tensor a = randn({256, 32}).to(dev), b = randn({128, 32}).to(dev);
  Tensor d2;
  if (args.fixed) {
    Tensor a2 = a.pow(2).sum({1}, true), b2 = b.pow(2).sum({1}).unsqueeze(0);
    d2 = a.matmul(b.t()).mul(-2).add(a2).add(b2);  // each add has an (N, M) input
  } else {
    d2 = (a.unsqueeze(1) - b.unsqueeze(0)).pow(2).sum({2});  // (256, 128, 32) on the way to (256, 128)
  }
  std::printf("broadcast_truth%s: pairwise squared distances %s, mean %.3f\n", args.fixed ? " --fixed" : "",
              shape_str(d2.sizes()).c_str(), d2.mean().item<double>());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "broadcast_truth: error: %s\n", e.what());
  return 1;
}
