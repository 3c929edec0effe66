// The twin of target_shape_mismatch: the targets are flattened to [N] first.
#include "accuracy.hpp"

int main() {
  Device dev("cuda");
  Tensor x = randn({512, 8}).to(dev);
  Tensor target = randn({512, 1}).to(dev).reshape({512});
  Tensor w = zeros({8}, TensorOptions().device(dev).requires_grad(true));
  for (int step = 0; step < 5; ++step) {
    Tensor pred = x.matmul(w);
    Tensor loss = (pred - target).pow(2).mean();
    loss.backward();
    {
      NoGradGuard g;
      w -= 0.01 * w.grad();
      w.grad().zero_();
    }
    profiler::step();
  }
  return 0;
}
