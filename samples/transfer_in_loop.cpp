// The seed's section 4: move the data set to the device once, not batch by batch inside
// the loop. By default each step copies its batch from the host, and every epoch sends
// the same batches again; `memlens transfers` counts the copies per step and flags the
// resent data. `--fixed` moves the whole data set once, before the loop.
//
//   transfer_in_loop [EPOCHS] [--fixed]
#include <cstdio>
#include <memory>

#include <memlens/recorder/recorder.hpp>
#include <memlens/runtime.hpp>

#include "sample_args.hpp"

using namespace memlens;

int main(int argc, char** argv) try {
  auto args = samples::parse_args(argc, argv, 3);
  const std::int64_t samples = 2048, features = 64, batch = 256;
  manual_seed(0);
  Device dev("cuda");
  Tensor x_host = randn({samples, features});
  Tensor y_host = randn({samples, 1});
  Tensor x_dev, y_dev;
  if (args.fixed) {
    x_dev = x_host.to(dev);  // once
    y_dev = y_host.to(dev);
  }
  auto model = std::make_shared<nn::Linear>(features, 1);
  model->to(dev);
  optim::SGD opt(model->parameters(), 0.01);
  nn::MSELoss criterion;
  double loss_value = 0;
  for (int epoch = 0; epoch < args.count; ++epoch) {
    for (std::int64_t at = 0; at < samples; at += batch) {
      Tensor xb = args.fixed ? x_dev.narrow(0, at, batch) : x_host.narrow(0, at, batch).to(dev);  // every step
      Tensor yb = args.fixed ? y_dev.narrow(0, at, batch) : y_host.narrow(0, at, batch).to(dev);
      opt.zero_grad();
      Tensor loss = criterion((*model)(xb), yb);
      loss.backward();
      opt.step();
      loss_value = loss.item<double>();
      profiler::step();
    }
  }
  std::printf("transfer_in_loop%s: %d epochs of %lld batches, loss %.4f\n", args.fixed ? " --fixed" : "", args.count,
              static_cast<long long>(samples / batch), loss_value);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "transfer_in_loop: error: %s\n", e.what());
  return 1;
}
