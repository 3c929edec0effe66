// In-place ops and autograd (seed claim 13): `y = x[0]; y += 1` on a leaf that requires
// grad is refused at the in-place op, naming the leaf; and an in-place change to a tensor
// saved for backward is caught by the version counter when backward needs it. Both
// errors are caught and printed; the right spellings follow.
#include <iostream>

#include <memlens/runtime.hpp>

using namespace memlens;

int main() {
  Tensor x = ones({3}, requires_grad(true));
  try {
    Tensor y = x[0];
    y += 1;  // refused: a view of a leaf that requires grad
    std::cout << "inplace_autograd: y += 1 was allowed (it should not be)" << std::endl;
    return 1;
  } catch (const AutogradError& e) {
    std::cout << "inplace_autograd: y = x[0]; y += 1 -> " << e.what() << std::endl;
  }
  {
    NoGradGuard no_grad;  // the right way to change a leaf in place
    Tensor y = x[0];
    y += 1;
  }
  std::cout << "inplace_autograd: under no_grad, x = " << x << "\n";

  Tensor w = ones({3}, requires_grad(true));
  Tensor s = (w * 2).sigmoid();  // sigmoid saves its output for backward
  s.mul_(2);                     // ... which this changes
  try {
    s.sum().backward();
    std::cout << "inplace_autograd: backward ran on a modified saved tensor (it should not)" << std::endl;
    return 1;
  } catch (const AutogradError& e) {
    std::cout << "inplace_autograd: backward after s.mul_(2) -> " << e.what() << std::endl;
  }
  Tensor t = (w * 2).sigmoid() * 2;  // out of place: backward works
  t.sum().backward();
  std::cout << "inplace_autograd: out of place, w.grad = " << w.grad() << "\n";
  return 0;
}
