#pragma once
// Activation checkpointing (torch.utils.checkpoint, the reentrant form): trade compute for
// memory. The forward runs without autograd, so none of its activations are kept; only
// the inputs are. Backward runs it again from those inputs, with the random generator
// as it was the first time (the same dropout masks), and backpropagates through the
// recomputation; parameters used inside get their gradients as usual.
#include <functional>
#include <vector>

#include "memlens/tensor/tensor.hpp"

namespace memlens {

Tensor checkpoint(const std::function<Tensor(const std::vector<Tensor>&)>& fn, const std::vector<Tensor>& inputs);
Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input);

}  // namespace memlens
