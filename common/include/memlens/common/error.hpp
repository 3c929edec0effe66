#pragma once
// The error every memlens part throws or derives from: one type a command catches to print
// one line and exit non-zero.
#include <stdexcept>

namespace memlens {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// Device selection or device mismatch (also a device name that does not parse).
class DeviceError : public Error {
  using Error::Error;
};

}  // namespace memlens
