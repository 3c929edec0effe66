#include "memlens/runtime/dtype.hpp"

namespace memlens {

ScalarType promote_types(ScalarType a, ScalarType b) {
  return static_cast<int>(a) > static_cast<int>(b) ? a : b;
}

}  // namespace memlens
