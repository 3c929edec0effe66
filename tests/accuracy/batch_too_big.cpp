// A first try at a batch larger than the device (1 GiB here), caught, then a smaller one:
// the failed request is an out-of-memory finding at its line.
#include "accuracy.hpp"

int main() {
  Device dev("cuda");
  std::int64_t batch = 1 << 20;
  try {
    Tensor x = empty({batch, 512}, TensorOptions().device(dev));  // BUG: oom
  } catch (const OutOfMemoryError&) {
    batch /= 16;
  }
  Tensor x = zeros({batch, 512}, TensorOptions().device(dev));
  return x.sum().item<double>() == 0 ? 0 : 1;
}
