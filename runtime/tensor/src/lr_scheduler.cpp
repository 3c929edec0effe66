#include "memlens/tensor/lr_scheduler.hpp"

#include <cmath>
#include <numbers>
#include <string>

#include "memlens/tensor/errors.hpp"

namespace memlens::optim {

StepLR::StepLR(Optimizer& optimizer, std::int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  if (step_size < 1) throw Error("StepLR: step_size must be positive, got " + std::to_string(step_size));
}

double StepLR::rate(std::int64_t epoch) const { return base_lr() * std::pow(gamma_, static_cast<double>(epoch / step_size_)); }

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, std::int64_t t_max, double eta_min)
    : LRScheduler(optimizer), t_max_(t_max), eta_min_(eta_min) {
  if (t_max < 1) throw Error("CosineAnnealingLR: T_max must be positive, got " + std::to_string(t_max));
}

double CosineAnnealingLR::rate(std::int64_t epoch) const {
  return eta_min_ +
         (base_lr() - eta_min_) * (1 + std::cos(std::numbers::pi * static_cast<double>(epoch) / static_cast<double>(t_max_))) / 2;
}

}  // namespace memlens::optim
