#pragma once
// Asks the CUDA runtime how many devices there are, when the CUDA parts are built.
#include <string>

#include "memlens/allocator/stream.hpp"

namespace memlens::detail {

struct CudaProbe {
  bool compiled = false;  // this build has the CUDA runtime linked
  int device_count = 0;
  std::string error;  // cudaGetErrorString of a failed query
};
CudaProbe probe_cuda();
// The probe's device count, asked once (0 without CUDA); usable: at least one device.
int cuda_device_count();
inline bool cuda_usable() { return cuda_device_count() > 0; }
// The CUDA streams (cuda_streams.hpp), for code that must not include CUDA's headers; only
// reached where cuda_usable().
StreamEvents& cuda_stream_events();

}  // namespace memlens::detail
