#pragma once
// Learning-rate schedules (torch.optim.lr_scheduler): step() after each optimizer step or
// epoch sets the optimizer's rate for the next one.
#include "memlens/tensor/optim.hpp"

namespace memlens::optim {

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer) : optimizer_(optimizer), base_lr_(optimizer.lr()) {}
  virtual ~LRScheduler() = default;
  void step() {
    ++epoch_;
    optimizer_.set_lr(rate(epoch_));
  }
  double last_lr() const { return optimizer_.lr(); }

 protected:
  // The rate after `epoch` steps of the schedule.
  virtual double rate(std::int64_t epoch) const = 0;
  double base_lr() const { return base_lr_; }

 private:
  Optimizer& optimizer_;
  double base_lr_;
  std::int64_t epoch_ = 0;
};

// The rate times gamma every step_size steps.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, std::int64_t step_size, double gamma = 0.1);

 protected:
  double rate(std::int64_t epoch) const override;

 private:
  std::int64_t step_size_;
  double gamma_;
};

// From the rate down to eta_min along half a cosine over t_max steps.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, std::int64_t t_max, double eta_min = 0);

 protected:
  double rate(std::int64_t epoch) const override;

 private:
  std::int64_t t_max_;
  double eta_min_;
};

}  // namespace memlens::optim
