// The corrected twin of linear_regression.cpp: w has shape (1,1), so `X @ w + b` is
// (100,1) like y and the loss averages the 100 residuals. Trained long enough (default
// 2000 epochs at the article's learning rate) it fits y = 2x + 1: w ≈ 2, b ≈ 1.
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <memlens/runtime.hpp>

using namespace memlens;

int main(int argc, char** argv) try {
  int epochs = argc > 1 ? std::atoi(argv[1]) : 2000;
  manual_seed(0);

  Tensor X = rand({100, 1}) * 10;
  Tensor y = 2 * X + 1 + randn({100, 1});

  Tensor w = zeros({1, 1}, requires_grad(true).device("cuda"));
  Tensor b = zeros({1}, requires_grad(true).device("cuda"));

  X = X.cuda();
  y = y.cuda();
  Tensor loss;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    Tensor y_pred = X.matmul(w) + b;  // (100,1), the same shape as y
    loss = (y_pred - y).pow(2).mean();

    loss.backward();
    {
      NoGradGuard no_grad;
      w -= 0.01 * w.grad();
      b -= 0.01 * b.grad();
      w.grad().zero_();
      b.grad().zero_();
    }
  }
  std::printf("linear_regression_fixed: %d epochs on %s\n", epochs, w.device().str().c_str());
  std::printf("w = %.4f, b = %.4f, loss = %.4f\n", w.item<double>(), b.item<double>(), loss.item<double>());
  std::cout << memory_summary(w.device());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "linear_regression_fixed: error: %s\n", e.what());
  return 1;
}
