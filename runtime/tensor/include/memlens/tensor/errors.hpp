#pragma once
// The runtime's typed errors. Each names what was wrong in PyTorch's words, so a
// message found in a PyTorch forum reads the same here.
#include "memlens/allocator/errors.hpp"  // OutOfMemoryError
#include "memlens/common/error.hpp"

namespace memlens {

// Sizes, strides, broadcasting, view compatibility, matmul shapes.
class ShapeError : public Error {
  using Error::Error;
};
// Dimension or element index out of range.
class IndexError : public Error {
  using Error::Error;
};
// Wrong dtype for an operation.
class TypeError : public Error {
  using Error::Error;
};
// An argument PyTorch's Python layer refuses before any kernel runs (a loss's target of
// another shape than its input, a batch norm module given the wrong rank): ValueError there.
class ValueError : public Error {
  using Error::Error;
};
// Autograd rules: leaf in-place, modified saved tensors, double backward.
class AutogradError : public Error {
  using Error::Error;
};

}  // namespace memlens
