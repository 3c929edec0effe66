// The seed article's section 7, written as the article wrote it, bug included:
// `X @ w` with X (100,1) and w (1) has shape (100), and `y_pred - y` with y (100,1)
// broadcasts to (100,100), so the loss averages 10,000 pairs instead of 100 residuals.
// linear_regression_fixed.cpp is the corrected twin.
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <memlens/runtime.hpp>

using namespace memlens;

int main(int argc, char** argv) try {
  int epochs = argc > 1 ? std::atoi(argv[1]) : 100;
  manual_seed(0);

  // Data
  Tensor X = rand({100, 1}) * 10;
  Tensor y = 2 * X + 1 + randn({100, 1});

  // Model parameters, explicitly on the accelerator
  Tensor w = zeros({1}, requires_grad(true).device("cuda"));
  Tensor b = zeros({1}, requires_grad(true).device("cuda"));

  // Training loop
  X = X.cuda();
  y = y.cuda();
  Tensor loss;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    Tensor y_pred = X.matmul(w) + b;  // X @ w + b
    loss = (y_pred - y).pow(2).mean();

    loss.backward();
    {
      NoGradGuard no_grad;  // in-place updates outside autograd
      w -= 0.01 * w.grad();
      b -= 0.01 * b.grad();
      w.grad().zero_();
      b.grad().zero_();
    }
  }
  std::printf("linear_regression: %d epochs on %s\n", epochs, w.device().str().c_str());
  std::printf("w = %.4f, b = %.4f, loss = %.4f\n", w.item<double>(), b.item<double>(), loss.item<double>());
  std::printf("y_pred - y has shape %s: the loss compared every prediction with every target\n",
              shape_str((X.matmul(w) + b - y).sizes()).c_str());
  std::cout << memory_summary(w.device());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "linear_regression: error: %s\n", e.what());
  return 1;
}
