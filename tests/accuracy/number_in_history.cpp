// The twin of graph_in_history: the plot keeps numbers, not tensors.
#include <vector>

#include "accuracy.hpp"

int main() {
  Device dev("cuda");
  auto model = accuracy::mlp(64, 256, 1, dev);
  optim::SGD opt(model->parameters(), 0.01);
  std::vector<double> history;
  for (int step = 0; step < 10; ++step) {
    Tensor x = randn({128, 64}).to(dev), y = randn({128, 1}).to(dev);
    opt.zero_grad();
    Tensor loss = ((*model)(x) - y).pow(2).mean();
    loss.backward();
    history.push_back(loss.item<double>());
    opt.step();
    profiler::step();
  }
  return history.size() == 10 ? 0 : 1;
}
