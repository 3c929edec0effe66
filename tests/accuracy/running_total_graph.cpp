// An epoch's running loss summed as a tensor: `total = total + loss` chains every step's
// graph to the next, so no step's activations are ever freed (memlens names where they
// and the saved batch were allocated).
#include "accuracy.hpp"

int main() {
  Device dev("cuda");
  auto model = accuracy::mlp(32, 512, 4, dev);
  Tensor total = zeros({}, TensorOptions().device(dev));
  for (int step = 0; step < 10; ++step) {
    Tensor x = randn({256, 32}).to(dev);  // BUG: growth
    Tensor loss = (*model)(x).pow(2).mean();  // BUG: growth
    total = total + loss;  // chains the graphs
    profiler::step();
  }
  return total.item<double>() > 0 ? 0 : 1;
}
