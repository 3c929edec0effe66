// A padding mask made every step from the batch's own lengths: it looks like a mask
// rebuilt every step, but each batch's lengths differ, so it is the step's data and there
// is nothing to build once.
#include "accuracy.hpp"

int main() {
  Device dev("cuda");
  constexpr std::int64_t kLen = 64, kBatch = 4, kHeads = 2, kDim = 16;
  manual_seed(0);
  Tensor positions = arange(kLen, TensorOptions().device(dev));
  double sum = 0;
  for (int step = 0; step < 8; ++step) {
    Tensor lengths = randint(1, kLen + 1, {kBatch, 1}).to(dev);
    Tensor keep = positions.unsqueeze(0).lt(lengths);  // [batch, len]: true up to each length
    Tensor mask = keep.unsqueeze(1).unsqueeze(1);       // [batch, 1, 1, len]
    Tensor q = randn({kBatch, kHeads, kLen, kDim}, dev), k = randn({kBatch, kHeads, kLen, kDim}, dev);
    Tensor v = randn({kBatch, kHeads, kLen, kDim}, dev);
    sum += nn::functional::scaled_dot_product_attention(q, k, v, mask).sum().item<double>();
    profiler::step();
  }
  return sum == sum ? 0 : 1;
}
