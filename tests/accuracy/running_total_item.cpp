// The twin of running_total_graph: the running loss is a number.
#include "accuracy.hpp"

int main() {
  Device dev("cuda");
  auto model = accuracy::mlp(32, 512, 4, dev);
  double total = 0;
  for (int step = 0; step < 10; ++step) {
    Tensor x = randn({256, 32}).to(dev);
    Tensor loss = (*model)(x).pow(2).mean();
    total += loss.item<double>();
    profiler::step();
  }
  return total > 0 ? 0 : 1;
}
