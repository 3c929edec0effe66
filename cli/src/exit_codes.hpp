#pragma once
// memlens exits 0 when all is well, 1 when a check failed, 2 on bad usage or input.
#include <stdexcept>
#include <string>

namespace memlens::cli {

inline constexpr int kOk = 0;
inline constexpr int kCheckFailed = 1;
inline constexpr int kBadInput = 2;

// Bad usage or input: printed as one line, exit 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace memlens::cli
