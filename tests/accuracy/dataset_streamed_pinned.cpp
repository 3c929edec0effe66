// A data set larger than the device (96 MiB beside a 64 MiB device: the manifest sets
// MEMLENS_SIM_MEMORY) streamed every epoch through one pinned host buffer, refilled for
// each batch, as a DataLoader with pin_memory does. Nothing to fix: the data cannot live
// on the device, and the copy into the pinned buffer is host memory to host memory.
#include "accuracy.hpp"

int main() {
  Device dev("cuda");
  constexpr std::int64_t kBatches = 12, kRows = 2048, kCols = 1024;  // 8 MiB a batch
  Tensor data = randn({kBatches * kRows, kCols});
  Tensor pinned = empty({kRows, kCols}).pin_memory();
  Tensor w = randn({kCols, 8}).to(dev);
  double sum = 0;
  for (int epoch = 0; epoch < 2; ++epoch)
    for (std::int64_t b = 0; b < kBatches; ++b) {
      pinned.copy_(data.narrow(0, b * kRows, kRows));
      Tensor batch = pinned.to(dev, true);
      sum += batch.matmul(w).sum().item<double>();
      profiler::step();
    }
  return sum == sum ? 0 : 1;
}
