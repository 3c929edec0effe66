#pragma once
// Asks the CUDA runtime how many devices there are, when the CUDA parts are built.
#include <string>

namespace memlens::detail {

struct CudaProbe {
  bool compiled = false;  // this build has the CUDA runtime linked
  int device_count = 0;
  std::string error;      // cudaGetErrorString of a failed query
};
CudaProbe probe_cuda();

}  // namespace memlens::detail
