#include "memlens/tensor/optim.hpp"

#include <cmath>

#include "memlens/tensor/autograd.hpp"
#include "tensor_internal.hpp"

namespace memlens::optim {

void Optimizer::zero_grad(bool set_to_none) {
  MEMLENS_API_ENTRY();
  NoGradGuard guard;
  for (auto& p : params_) {
    if (set_to_none) p.set_grad(Tensor());
    else if (Tensor g = p.grad(); g.defined()) g.zero_();
  }
}

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : Optimizer(std::move(params)), opt_(options), momentum_(params_.size()) {}

void SGD::step() {
  MEMLENS_API_ENTRY();
  NoGradGuard guard;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor g = params_[i].grad();
    if (!g.defined()) continue;
    if (opt_.weight_decay != 0) g = g + params_[i] * opt_.weight_decay;
    if (opt_.momentum != 0) {
      if (!momentum_[i].defined()) {
        momentum_[i] = g.clone();
        detail::emit_category(momentum_[i], instrument::Category::OptimizerState);
      } else momentum_[i].mul_(opt_.momentum).add_(g);
      g = momentum_[i];
    }
    params_[i].sub_(g, opt_.lr);
  }
}

Adam::Adam(std::vector<Tensor> params, AdamOptions options) : Adam(std::move(params), options, false) {}

Adam::Adam(std::vector<Tensor> params, AdamOptions options, bool decoupled_decay)
    : Optimizer(std::move(params)),
      opt_(options),
      decoupled_decay_(decoupled_decay),
      weight_decay_(options.weight_decay.value_or(decoupled_decay ? 0.01 : 0)),
      exp_avg_(params_.size()),
      exp_avg_sq_(params_.size()) {}

void Adam::step() {
  MEMLENS_API_ENTRY();
  NoGradGuard guard;
  ++steps_;
  double bc1 = 1 - std::pow(opt_.beta1, static_cast<double>(steps_));
  double bc2 = 1 - std::pow(opt_.beta2, static_cast<double>(steps_));
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor g = params_[i].grad();
    if (!g.defined()) continue;
    if (weight_decay_ != 0 && decoupled_decay_) params_[i].mul_(1 - opt_.lr * weight_decay_);
    else if (weight_decay_ != 0) g = g + params_[i] * weight_decay_;
    if (!exp_avg_[i].defined()) {
      exp_avg_[i] = zeros_like(params_[i]);
      exp_avg_sq_[i] = zeros_like(params_[i]);
      detail::emit_category(exp_avg_[i], instrument::Category::OptimizerState);
      detail::emit_category(exp_avg_sq_[i], instrument::Category::OptimizerState);
    }
    exp_avg_[i].mul_(opt_.beta1).add_(g, 1 - opt_.beta1);
    exp_avg_sq_[i].mul_(opt_.beta2).add_(g * g, 1 - opt_.beta2);
    Tensor denom = (exp_avg_sq_[i] / bc2).sqrt().add(opt_.eps);
    params_[i].sub_(exp_avg_[i] / denom, opt_.lr / bc1);
  }
}

}  // namespace memlens::optim
