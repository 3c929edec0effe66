// Clean: fresh Gaussian noise each step, as a denoising model trains. The noise is the
// step's data, made by an op, not a buffer to reuse.
#include "accuracy.hpp"

int main() {
  Device dev("cuda");
  Tensor clean = randn({128, 256}).to(dev);
  double sum = 0;
  for (int step = 0; step < 12; ++step) {
    Tensor noise = randn({128, 256}, TensorOptions().device(dev));
    sum += (clean + noise * 0.1).pow(2).mean().item<double>();
    profiler::step();
  }
  return sum == sum ? 0 : 1;
}
