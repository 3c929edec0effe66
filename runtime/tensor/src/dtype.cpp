#include "memlens/tensor/dtype.hpp"

namespace memlens {

namespace {
// PyTorch's lattice: bool < uint8 < int32 < int64 < float16, bfloat16 < float32 < float64.
int rank(ScalarType t) {
  switch (t) {
    case kBool:
      return 0;
    case kUInt8:
      return 1;
    case kInt32:
      return 2;
    case kInt64:
      return 3;
    case kFloat16:
    case kBFloat16:
      return 4;
    case kFloat32:
      return 5;
    case kFloat64:
      return 6;
  }
  return 0;
}
}  // namespace

ScalarType promote_types(ScalarType a, ScalarType b) {
  if ((a == kFloat16 && b == kBFloat16) || (a == kBFloat16 && b == kFloat16)) return kFloat32;  // neither holds the other
  return rank(a) >= rank(b) ? a : b;
}

bool can_cast(ScalarType from, ScalarType to) {
  if (is_floating_point(from) && !is_floating_point(to)) return false;
  return to != kBool || from == kBool;
}

ScalarType opmath_type(ScalarType t) { return t == kFloat16 || t == kBFloat16 ? kFloat32 : t; }

}  // namespace memlens
