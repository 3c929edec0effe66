// The twin of batch_too_big: the batch is sized to the device from the start.
#include "accuracy.hpp"

int main() {
  Device dev("cuda");
  std::int64_t batch = 1 << 16;
  Tensor x = zeros({batch, 512}, TensorOptions().device(dev));
  return x.sum().item<double>() == 0 ? 0 : 1;
}
