// A regression whose predictions are [N] and targets [N, 1]: the difference broadcasts to
// [N, N], N times the memory and a wrong loss.
#include "accuracy.hpp"

int main() {
  Device dev("cuda");
  Tensor x = randn({512, 8}).to(dev);
  Tensor target = randn({512, 1}).to(dev);
  Tensor w = zeros({8}, TensorOptions().device(dev).requires_grad(true));
  for (int step = 0; step < 5; ++step) {
    Tensor pred = x.matmul(w);                 // [512]
    Tensor loss = (pred - target).pow(2).mean();  // BUG: broadcast
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
