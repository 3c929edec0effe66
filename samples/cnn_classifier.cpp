// A small CNN (two blocks of convolution, batch norm, ReLU and max pooling, then a linear
// classifier) trained on images it draws itself: bars, crosses and boxes in noise. Each
// layer is one line of forward(), so the report's sites are the layers: the first block,
// at full resolution, holds the most activation memory; each pooling quarters it.
//
//   cnn_classifier [--steps N] [--batch B] [--size S] [--width C]
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include <memlens/recorder/recorder.hpp>
#include <memlens/runtime.hpp>

using namespace memlens;

namespace {

struct Options {
  int steps = 10, batch = 32, size = 16, width = 8;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("option " + flag + " needs a value");
    int v = std::stoi(argv[++i]);
    if (flag == "--steps") o.steps = v;
    else if (flag == "--batch") o.batch = v;
    else if (flag == "--size") o.size = v;
    else if (flag == "--width") o.width = v;
    else throw std::invalid_argument("unknown option " + flag + " (expected --steps, --batch, --size, --width)");
  }
  if (o.steps < 1 || o.batch < 2 || o.width < 1) throw std::invalid_argument("options must be positive (batch at least 2)");
  if (o.size < 8 || o.size % 4 != 0) throw std::invalid_argument("--size must be a multiple of 4, at least 8");
  return o;
}

constexpr std::int64_t kClasses = 4;  // horizontal bar, vertical bar, cross, box

// `count` images [count, 1, size, size] with their labels: a shape at a random place, in noise.
std::pair<Tensor, Tensor> draw(std::int64_t count, std::int64_t size) {
  Tensor labels = randint(0, kClasses, {count});
  Tensor images = randn({count, 1, size, size}) * 0.3;
  Tensor where = randint(2, size - 2, {count, 2});
  float* px = images.data_ptr<float>();
  const std::int64_t* lp = labels.data_ptr<std::int64_t>();
  const std::int64_t* wp = where.data_ptr<std::int64_t>();
  for (std::int64_t n = 0; n < count; ++n) {
    std::int64_t cy = wp[2 * n], cx = wp[2 * n + 1], kind = lp[n];
    for (std::int64_t y = 0; y < size; ++y)
      for (std::int64_t x = 0; x < size; ++x) {
        bool on = (kind == 0 && y == cy) || (kind == 1 && x == cx) || (kind == 2 && (y == cy || x == cx)) ||
                  (kind == 3 && std::max(std::abs(y - cy), std::abs(x - cx)) == 2);
        if (on) px[(n * size + y) * size + x] += 1.5f;
      }
  }
  return {images, labels};
}

class Cnn : public nn::Module {
 public:
  Cnn(std::int64_t width, std::int64_t size)
      : conv1_(std::make_shared<nn::Conv2d>(1, width, 3, 1, 1)), bn1_(std::make_shared<nn::BatchNorm2d>(width)),
        conv2_(std::make_shared<nn::Conv2d>(width, 2 * width, 3, 1, 1)), bn2_(std::make_shared<nn::BatchNorm2d>(2 * width)),
        pool_(std::make_shared<nn::MaxPool2d>(2)), fc_(std::make_shared<nn::Linear>(2 * width * (size / 4) * (size / 4), kClasses)) {
    register_module("conv1", conv1_);
    register_module("bn1", bn1_);
    register_module("conv2", conv2_);
    register_module("bn2", bn2_);
    register_module("fc", fc_);
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = (*conv1_)(x);        // block 1, full resolution
    h = (*bn1_)(h).relu();
    h = (*pool_)(h);
    h = (*conv2_)(h);               // block 2, a quarter of the pixels
    h = (*bn2_)(h).relu();
    h = (*pool_)(h);
    return (*fc_)(h.flatten(1));    // classifier
  }

 private:
  std::shared_ptr<nn::Conv2d> conv1_;
  std::shared_ptr<nn::BatchNorm2d> bn1_;
  std::shared_ptr<nn::Conv2d> conv2_;
  std::shared_ptr<nn::BatchNorm2d> bn2_;
  std::shared_ptr<nn::MaxPool2d> pool_;
  std::shared_ptr<nn::Linear> fc_;
};

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  manual_seed(0);
  Device dev("cuda");
  auto [images, labels] = draw(1024, o.size);
  images = images.to(dev);
  labels = labels.to(dev);

  Cnn model(o.width, o.size);
  model.to(dev);
  optim::SGD opt(model.parameters(), optim::SGDOptions{0.05, 0.9});
  nn::CrossEntropyLoss criterion;
  std::int64_t at = 0;
  double last = 0;
  for (int step = 0; step < o.steps; ++step) {
    if (at + o.batch > images.size(0)) at = 0;
    Tensor x = images.narrow(0, at, o.batch), y = labels.narrow(0, at, o.batch);
    at += o.batch;
    opt.zero_grad();
    Tensor loss;
    {
      profiler::Scope forward("forward");
      loss = criterion(model(x), y);
    }
    {
      profiler::Scope backward("backward");
      loss.backward();
    }
    opt.step();
    last = loss.item<double>();
    profiler::step();
  }
  model.eval();
  NoGradGuard no_grad;
  double correct = model(images.narrow(0, 0, 256)).argmax(1).eq(labels.narrow(0, 0, 256)).sum().item<double>();
  std::printf("cnn_classifier: %d steps of %d images of %dx%d, loss %.4f, accuracy %.3f, peak %s on %s\n", o.steps, o.batch,
              o.size, o.size, last, correct / 256, format_bytes(max_memory_allocated(dev)).c_str(), dev.str().c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "cnn_classifier: error: %s\n", e.what());
  return 1;
}
