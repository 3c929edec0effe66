#pragma once
// A small torch::nn: modules own parameters; losses are functions of tensors.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "memlens/runtime/tensor.hpp"

namespace memlens::nn {

class Module {
 public:
  virtual ~Module() = default;
  virtual Tensor forward(const Tensor& x) = 0;
  // Out of line, so the call site recorded for the module's ops is the caller's line.
  Tensor operator()(const Tensor& x);
  // Every parameter of this module and its children, in registration order.
  std::vector<Tensor> parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  void zero_grad();
  // Moves parameters to `d` (a real copy when the device differs), as Module::to.
  void to(const Device& d);

 protected:
  Tensor& register_parameter(std::string name, Tensor t);
  void register_module(std::string name, std::shared_ptr<Module> m);

 private:
  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

// y = x W^T + b, initialised as PyTorch does: U(-1/sqrt(in), 1/sqrt(in)).
class Linear : public Module {
 public:
  Linear(std::int64_t in_features, std::int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;
};

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override { return x.relu(); }
};

class Sequential : public Module {
 public:
  Sequential() = default;
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);
  Sequential& push_back(std::shared_ptr<Module> m);
  Tensor forward(const Tensor& x) override;
  std::size_t size() const { return layers_.size(); }

 private:
  std::vector<std::shared_ptr<Module>> layers_;
};

// Mean of squared differences; shapes must match exactly (unlike PyTorch, which only
// warns: a broadcast loss is the seed's section 7 bug).
class MSELoss {
 public:
  Tensor operator()(const Tensor& input, const Tensor& target) const;
};

// Mean negative log-likelihood of log_softmax(logits) at int64 class targets.
class CrossEntropyLoss {
 public:
  Tensor operator()(const Tensor& logits, const Tensor& target) const;
};

}  // namespace memlens::nn
