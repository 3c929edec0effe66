#include "memlens/common/scalar_type.hpp"

namespace memlens {

std::size_t element_size(ScalarType t) {
  switch (t) {
    case kBool:
      return 1;
    case kInt64:
      return 8;
    case kFloat32:
      return 4;
    case kFloat64:
      return 8;
    case kUInt8:
      return 1;
    case kInt32:
      return 4;
    case kFloat16:
      return 2;
    case kBFloat16:
      return 2;
  }
  return 1;
}

std::string_view type_name(ScalarType t) {
  switch (t) {
    case kBool:
      return "bool";
    case kInt64:
      return "long int";
    case kFloat32:
      return "float";
    case kFloat64:
      return "double";
    case kUInt8:
      return "unsigned char";
    case kInt32:
      return "int";
    case kFloat16:
      return "c10::Half";
    case kBFloat16:
      return "c10::BFloat16";
  }
  return "?";
}

std::string_view dtype_repr(ScalarType t) {
  switch (t) {
    case kBool:
      return "torch.bool";
    case kInt64:
      return "torch.int64";
    case kFloat32:
      return "torch.float32";
    case kFloat64:
      return "torch.float64";
    case kUInt8:
      return "torch.uint8";
    case kInt32:
      return "torch.int32";
    case kFloat16:
      return "torch.float16";
    case kBFloat16:
      return "torch.bfloat16";
  }
  return "?";
}

}  // namespace memlens
