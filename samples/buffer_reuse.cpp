// The seed's section 4: preallocate a buffer and copy_ into it. By default every step
// builds its input in a fresh tensor of the same size, which `memlens churn` reports as a
// buffer allocated afresh every step; `--fixed` allocates it once and refills it.
//
//   buffer_reuse [STEPS] [--fixed]
#include <cstdio>

#include <memlens/recorder/recorder.hpp>
#include <memlens/runtime.hpp>

#include "sample_args.hpp"

using namespace memlens;

int main(int argc, char** argv) try {
  auto args = samples::parse_args(argc, argv, 16);
  const std::int64_t batch = 128, features = 256;
  manual_seed(0);
  Device dev("cuda");
  Tensor source = randn({batch * 4, features}).to(dev);  // where each step's input comes from
  Tensor weight = randn({features, 16}).to(dev);
  Tensor buffer = args.fixed ? empty({batch, features}, TensorOptions().device(dev)) : Tensor();
  double total = 0;
  for (int step = 0; step < args.count; ++step) {
    Tensor input = args.fixed ? buffer : empty({batch, features}, TensorOptions().device(dev));  // a fresh one each step
    input.copy_(source.narrow(0, (step % 4) * batch, batch));
    total += input.matmul(weight).sum().item<double>();
    profiler::step();
  }
  std::printf("buffer_reuse%s: %d steps, checksum %.3f\n", args.fixed ? " --fixed" : "", args.count, total);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "buffer_reuse: error: %s\n", e.what());
  return 1;
}
