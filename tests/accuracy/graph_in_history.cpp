// Keeps every step's loss tensor for a plot, graph and all: each step's activations
// survive, and live memory grows step after step. memlens names where the surviving
// memory was allocated: the batch the graph saved, and the forward's activations.
#include <vector>

#include "accuracy.hpp"

int main() {
  Device dev("cuda");
  auto model = accuracy::mlp(64, 256, 1, dev);
  optim::SGD opt(model->parameters(), 0.01);
  std::vector<Tensor> history;
  for (int step = 0; step < 10; ++step) {
    Tensor x = randn({128, 64}).to(dev), y = randn({128, 1}).to(dev);  // BUG: growth
    opt.zero_grad();
    Tensor loss = ((*model)(x) - y).pow(2).mean();  // BUG: growth
    history.push_back(loss);  // keeps the graph, which keeps the memory below
    opt.step();
    profiler::step();
  }
  return history.size() == 10 ? 0 : 1;
}
