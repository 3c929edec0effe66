#pragma once
// Optimisers: in-place parameter updates under NoGradGuard, with their state tensors.
#include <optional>
#include <vector>

#include "memlens/tensor/tensor.hpp"

namespace memlens::optim {

class Optimizer {
 public:
  explicit Optimizer(std::vector<Tensor> params) : params_(std::move(params)) {}
  virtual ~Optimizer() = default;
  virtual void step() = 0;
  // Drops the gradients (PyTorch's default set_to_none=True frees their memory).
  void zero_grad(bool set_to_none = true);
  const std::vector<Tensor>& parameters() const { return params_; }
  // The learning rate, which a scheduler changes between steps.
  virtual double lr() const = 0;
  virtual void set_lr(double lr) = 0;

 protected:
  std::vector<Tensor> params_;
};

struct SGDOptions {
  double lr = 0.01;
  double momentum = 0;
  double weight_decay = 0;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options);
  SGD(std::vector<Tensor> params, double lr) : SGD(std::move(params), SGDOptions{lr}) {}
  void step() override;
  double lr() const override { return opt_.lr; }
  void set_lr(double lr) override { opt_.lr = lr; }

 private:
  SGDOptions opt_;
  std::vector<Tensor> momentum_;  // one buffer per parameter, made on first use
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  // Unset: the optimizer's own default, as PyTorch's (Adam 0, AdamW 0.01), so an AdamW
  // given only a learning rate still decays.
  std::optional<double> weight_decay = std::nullopt;
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions options = {});
  void step() override;
  double lr() const override { return opt_.lr; }
  void set_lr(double lr) override { opt_.lr = lr; }

 protected:
  // AdamW's: weight decay shrinks the parameter itself instead of joining the gradient.
  Adam(std::vector<Tensor> params, AdamOptions options, bool decoupled_decay);

 private:
  AdamOptions opt_;
  bool decoupled_decay_ = false;
  double weight_decay_ = 0;  // opt_.weight_decay or the default
  std::vector<Tensor> exp_avg_, exp_avg_sq_;
  std::int64_t steps_ = 0;
};

// Adam with decoupled weight decay (Loshchilov and Hutter), PyTorch's AdamW: default
// weight_decay 0.01.
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, AdamOptions options = {}) : Adam(std::move(params), options, true) {}
};

}  // namespace memlens::optim
