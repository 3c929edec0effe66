// The twin of hidden_state_carried: the state is detached at each step (truncated BPTT).
#include "accuracy.hpp"

int main() {
  Device dev("cuda");
  Tensor wh = (randn({128, 128}) * 0.05).to(dev).requires_grad_(true);
  Tensor h = zeros({64, 128}, TensorOptions().device(dev));
  for (int step = 0; step < 10; ++step) {
    Tensor x = randn({64, 128}).to(dev);
    h = (h.matmul(wh) + x).tanh().detach();
    profiler::step();
  }
  return h.sum().item<double>() == h.sum().item<double>() ? 0 : 1;
}
