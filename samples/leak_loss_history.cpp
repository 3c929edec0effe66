// The classic training leak: keeping every step's loss *with its graph* (PyTorch's
// `losses.append(val_loss)` instead of `val_loss.item()`). The validation loss is never
// backpropagated, so its graph keeps the activations it saved, and each kept loss keeps
// its graph: live memory grows by the same amount every step. `memlens leaks` reports
// the sites that grow, with bytes per step.
//
//   leak_loss_history [STEPS]          the leak
//   leak_loss_history [STEPS] --fixed  keeps loss.item() instead: no growth
#include <cstdio>
#include <memory>
#include <vector>

#include <memlens/recorder/recorder.hpp>
#include <memlens/runtime.hpp>

#include "sample_args.hpp"

using namespace memlens;

int main(int argc, char** argv) try {
  auto [steps, fixed] = samples::parse_args(argc, argv, 20);
  manual_seed(0);
  Device dev("cuda");
  nn::Sequential model{std::make_shared<nn::Linear>(64, 256), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(256, 1)};
  model.to(dev);
  optim::SGD opt(model.parameters(), 0.01);
  nn::MSELoss criterion;
  Tensor x = randn({128, 64}).to(dev);
  Tensor y = randn({128, 1}).to(dev);
  Tensor x_val = randn({256, 64}).to(dev);
  Tensor y_val = randn({256, 1}).to(dev);

  std::vector<Tensor> kept;       // the leak: every loss with its graph
  std::vector<double> history;    // the fix: plain numbers
  for (int step = 0; step < steps; ++step) {
    opt.zero_grad();
    Tensor out = model(x);
    Tensor loss = criterion(out, y);
    loss.backward();
    opt.step();
    Tensor val_loss = criterion(model(x_val), y_val);  // forgot NoGradGuard: a graph is built
    if (fixed) history.push_back(val_loss.item<double>());
    else kept.push_back(val_loss);
    profiler::step();
  }
  std::printf("leak_loss_history%s: %d steps, %zu validation losses kept with their graphs; last one %.4f\n",
              fixed ? " --fixed" : "", steps, kept.size(),
              fixed ? history.back() : kept.back().item<double>());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "leak_loss_history: error: %s\n", e.what());
  return 1;
}
