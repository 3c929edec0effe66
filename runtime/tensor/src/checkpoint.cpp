#include "memlens/tensor/checkpoint.hpp"

#include "memlens/tensor/autograd.hpp"
#include "tensor_internal.hpp"

namespace memlens {

Tensor checkpoint(const std::function<Tensor(const std::vector<Tensor>&)>& fn, const std::vector<Tensor>& inputs) {
  MEMLENS_API_ENTRY();
  const RngState rng = get_rng_state();
  Tensor out;
  {
    NoGradGuard no_grad;
    instrument::UserCode user;
    out = fn(inputs);
  }
  if (!out.defined()) throw Error("checkpoint: the function returned an undefined tensor");
  autograd::record(out, "CheckpointFunctionBackward", inputs, [fn, inputs, rng](const Tensor& g, const autograd::Node& n) {
    std::vector<Tensor> detached;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      Tensor d = inputs[i].detach();
      if (n.needs_input_grad(i)) d.requires_grad_(true);
      detached.push_back(d);
    }
    const RngState now = get_rng_state();
    set_rng_state(rng);
    Tensor again;
    {
      AutoGradMode grad(true);  // the recomputation runs inside backward, where it is off
      instrument::UserCode user;
      again = fn(detached);
    }
    set_rng_state(now);
    if (again.requires_grad()) autograd::backward(again, g, false);
    std::vector<Tensor> grads;
    for (const Tensor& d : detached) grads.push_back(d.requires_grad() ? d.grad() : Tensor());
    return grads;
  });
  return out;
}

Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input) {
  MEMLENS_API_ENTRY();
  return checkpoint([fn](const std::vector<Tensor>& in) { return fn(in[0]); }, std::vector<Tensor>{input});
}

}  // namespace memlens
