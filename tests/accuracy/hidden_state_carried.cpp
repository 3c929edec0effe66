// A recurrent loop that carries its hidden state from step to step without detaching it:
// every step's graph hangs on the next, and memory grows.
#include "accuracy.hpp"

int main() {
  Device dev("cuda");
  Tensor wh = (randn({128, 128}) * 0.05).to(dev).requires_grad_(true);
  Tensor h = zeros({64, 128}, TensorOptions().device(dev));
  for (int step = 0; step < 10; ++step) {
    Tensor x = randn({64, 128}).to(dev);
    h = (h.matmul(wh) + x).tanh();  // BUG: growth
    profiler::step();
  }
  return h.sum().item<double>() == h.sum().item<double>() ? 0 : 1;
}
