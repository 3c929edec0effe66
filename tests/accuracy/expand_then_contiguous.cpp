// A bias expanded to the batch and made contiguous before the add: the expanded view is
// copied into a batch-sized tensor that broadcasting would never have built.
#include "accuracy.hpp"

int main() {
  Device dev("cuda");
  Tensor bias = randn({1, 1024}).to(dev);
  double sum = 0;
  for (int step = 0; step < 5; ++step) {
    Tensor x = randn({256, 1024}).to(dev);
    Tensor b = bias.expand({256, 1024}).contiguous();  // BUG: materialized_expand
    sum += (x + b).sum().item<double>();
    profiler::step();
  }
  return sum == sum ? 0 : 1;
}
