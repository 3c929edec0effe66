#pragma once
// The allocator's own error; DeviceError (memlens/common/error.hpp) covers the rest.
#include "memlens/common/error.hpp"

namespace memlens {

// A device asked for more memory than it can give (PyTorch's OutOfMemoryError).
class OutOfMemoryError : public Error {
  using Error::Error;
};

}  // namespace memlens
