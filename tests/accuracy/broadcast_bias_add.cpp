// The twin of expand_then_contiguous: the add broadcasts the bias itself.
#include "accuracy.hpp"

int main() {
  Device dev("cuda");
  Tensor bias = randn({1, 1024}).to(dev);
  double sum = 0;
  for (int step = 0; step < 5; ++step) {
    Tensor x = randn({256, 1024}).to(dev);
    sum += (x + bias).sum().item<double>();
    profiler::step();
  }
  return sum == sum ? 0 : 1;
}
