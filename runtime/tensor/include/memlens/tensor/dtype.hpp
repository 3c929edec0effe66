#pragma once
// The runtime's element types: names and sizes from the floor, promotion here.
#include "memlens/common/scalar_type.hpp"

namespace memlens {

// The wider of two types: bool < int64 < float32 < float64.
ScalarType promote_types(ScalarType a, ScalarType b);

}  // namespace memlens
