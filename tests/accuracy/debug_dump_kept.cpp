// Activations kept for a debugging dump at the last step and never released: they are
// still held when the run ends.
#include <vector>

#include "accuracy.hpp"

std::vector<Tensor> dumped;

int main() {
  Device dev("cuda");
  auto model = accuracy::mlp(64, 128, 8, dev);
  double sum = 0;
  for (int step = 0; step < 6; ++step) {
    Tensor x = randn({256, 64}).to(dev);
    Tensor out = (*model)(x).detach();  // BUG: leak
    if (step == 5) dumped.push_back(out);
    sum += out.sum().item<double>();
    profiler::step();
  }
  return sum == sum ? 0 : 1;
}
