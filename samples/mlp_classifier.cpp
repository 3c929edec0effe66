// A two-layer MLP trained with cross-entropy on a synthetic data set (fixed seed), with
// Scope("forward"), Scope("backward") and step(). Gradient accumulation (the seed's
// section 4): the peak depends on the micro-batch, not on the effective batch, so
// `--batch 64 --accumulate 4` peaks well below `--batch 256` for the same update.
//
//   mlp_classifier [--steps N] [--batch B] [--accumulate K] [--hidden H] [--classes C]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include <memlens/recorder/recorder.hpp>
#include <memlens/runtime.hpp>

using namespace memlens;

int main(int argc, char** argv) try {
  int steps = 20, batch = 64, accumulate = 1, hidden = 1024, num_classes = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    int v = std::atoi(argv[i + 1]);
    if (flag == "--steps") steps = v;
    else if (flag == "--batch") batch = v;
    else if (flag == "--accumulate") accumulate = v;
    else if (flag == "--hidden") hidden = v;
    else if (flag == "--classes") num_classes = v;
    else throw std::invalid_argument("unknown option " + flag + " (expected --steps, --batch, --accumulate, --hidden, --classes)");
  }
  if (steps < 1 || batch < 1 || accumulate < 1 || hidden < 1 || num_classes < 2)
    throw std::invalid_argument("options must be positive (and at least 2 classes)");
  const std::int64_t features = 32, classes = num_classes, samples = 4096;
  manual_seed(0);
  Device dev("cuda");

  // Labels from a fixed random linear map, so the classes are learnable; moved once.
  Tensor x_all = randn({samples, features});
  Tensor y_all = x_all.matmul(randn({features, classes})).argmax(1);
  x_all = x_all.to(dev);
  y_all = y_all.to(dev);

  nn::Sequential model{std::make_shared<nn::Linear>(features, hidden), std::make_shared<nn::ReLU>(),
                       std::make_shared<nn::Linear>(hidden, classes)};
  model.to(dev);
  optim::SGD opt(model.parameters(), optim::SGDOptions{0.1, 0.9});
  nn::CrossEntropyLoss criterion;

  std::int64_t at = 0;
  double last = 0;
  for (int step = 0; step < steps; ++step) {
    opt.zero_grad();
    for (int k = 0; k < accumulate; ++k) {
      if (at + batch > samples) at = 0;
      Tensor xb = x_all.narrow(0, at, batch), yb = y_all.narrow(0, at, batch);
      at += batch;
      Tensor loss;
      {
        profiler::Scope forward("forward");
        loss = criterion(model(xb), yb) / static_cast<double>(accumulate);
      }
      {
        profiler::Scope backward("backward");
        loss.backward();
      }
      last = loss.item<double>() * accumulate;
    }
    opt.step();
    profiler::step();
  }
  // Accuracy in micro-batches too, so evaluation does not set the peak.
  NoGradGuard no_grad;
  double correct = 0;
  for (std::int64_t i = 0; i + batch <= samples; i += batch)
    correct += model(x_all.narrow(0, i, batch)).argmax(1).eq(y_all.narrow(0, i, batch)).sum().item<double>();
  double accuracy = correct / static_cast<double>(samples / batch * batch);
  std::printf("mlp_classifier: %d steps of %d x %d samples, loss %.4f, accuracy %.3f, peak %s on %s\n", steps, accumulate,
              batch, last, accuracy, format_bytes(max_memory_allocated(dev)).c_str(), dev.str().c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "mlp_classifier: error: %s\n", e.what());
  return 1;
}
