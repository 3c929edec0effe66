// A tied projection that transposes the embedding table and makes it contiguous in every
// step: a full copy of the table each time.
#include "accuracy.hpp"

int main() {
  Device dev("cuda");
  Tensor table = randn({512, 256}).to(dev);
  double sum = 0;
  for (int step = 0; step < 6; ++step) {
    Tensor h = randn({64, 256}).to(dev);
    Tensor projection = table.t().contiguous();  // BUG: layout_copy
    sum += h.matmul(projection).sum().item<double>();
    profiler::step();
  }
  return sum == sum ? 0 : 1;
}
