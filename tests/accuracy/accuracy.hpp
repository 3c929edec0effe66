#pragma once
// What the accuracy programs share: the runtime, the recorder's steps, and a small MLP.
#include <memory>

#include <memlens/recorder/recorder.hpp>
#include <memlens/runtime.hpp>

using namespace memlens;

namespace accuracy {

inline std::shared_ptr<nn::Sequential> mlp(std::int64_t in, std::int64_t hidden, std::int64_t out, const Device& dev) {
  manual_seed(0);
  auto m = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(in, hidden), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(hidden, out)});
  m->to(dev);
  return m;
}

}  // namespace accuracy
