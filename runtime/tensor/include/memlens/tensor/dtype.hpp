#pragma once
// The runtime's element types: names and sizes from the floor, promotion here.
#include "memlens/common/scalar_type.hpp"

namespace memlens {

// The wider of two types: bool < int64 < float32 < float64.
ScalarType promote_types(ScalarType a, ScalarType b);
// Whether an in-place op may store a result of type `from` into a tensor of type `to`
// (PyTorch's canCast): not a float into an integer, nor anything but bool into bool.
bool can_cast(ScalarType from, ScalarType to);
// The type a 16-bit float is computed in (float32, PyTorch's "opmath" type); any other
// type is computed in itself.
ScalarType opmath_type(ScalarType t);

}  // namespace memlens
