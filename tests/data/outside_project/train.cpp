// A user's training program, built outside memlens against an installed package: a
// linear model fitted by SGD, each iteration a step the recorder marks.
#include <cstdio>
#include <cstdlib>

#include <memlens/recorder/recorder.hpp>
#include <memlens/runtime.hpp>

using namespace memlens;

int main(int argc, char** argv) {
  int steps = argc > 1 ? std::atoi(argv[1]) : 10;
  manual_seed(0);
  Tensor X = (rand({64, 4}) * 10).cuda();
  Tensor y = X.matmul(ones({4, 1}).cuda()) + 1;
  Tensor w = zeros({4, 1}, requires_grad(true).device("cuda"));
  Tensor b = zeros({1}, requires_grad(true).device("cuda"));
  for (int i = 0; i < steps; ++i) {
    Tensor loss = (X.matmul(w) + b - y).pow(2).mean();
    loss.backward();
    {
      NoGradGuard no_grad;
      w -= 0.001 * w.grad();
      b -= 0.001 * b.grad();
      w.grad().zero_();
      b.grad().zero_();
    }
    profiler::step();
  }
  std::printf("train: %d steps, w[0] = %.4f\n", steps, w.index({0, 0}).item<double>());
  return 0;
}
