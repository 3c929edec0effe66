#pragma once
// Compares autograd's gradients with central finite differences, in float64.
#include <functional>
#include <string>
#include <vector>

#include <memlens/runtime.hpp>

namespace memlens::testing {

// Largest |analytic - numeric| over every element of every input, relative to
// max(1, |numeric|). `f` must return a scalar.
inline double gradcheck_error(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& inputs_in,
                              double eps = 1e-6) {
  std::vector<Tensor> inputs;
  for (auto& t : inputs_in) inputs.push_back(t.detach().clone().requires_grad_(true));
  Tensor out = f(inputs);
  out.backward();
  double worst = 0;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    Tensor analytic = inputs[k].grad();
    if (!analytic.defined()) analytic = zeros_like(inputs[k]);
    Tensor a = analytic.contiguous();
    for (std::int64_t j = 0; j < inputs[k].numel(); ++j) {
      auto eval = [&](double delta) {
        NoGradGuard guard;
        std::vector<Tensor> moved;
        for (std::size_t m = 0; m < inputs.size(); ++m) {
          Tensor c = inputs[m].detach().clone();
          if (m == k) c.data_ptr<double>()[j] += delta;
          moved.push_back(c);
        }
        return f(moved).item<double>();
      };
      double numeric = (eval(eps) - eval(-eps)) / (2 * eps);
      double got = a.data_ptr<double>()[j];
      worst = std::max(worst, std::abs(got - numeric) / std::max(1.0, std::abs(numeric)));
    }
  }
  return worst;
}

}  // namespace memlens::testing
