#include <cuda_runtime_api.h>

#include "cuda_probe.hpp"

namespace memlens::detail {

CudaProbe probe_cuda() {
  CudaProbe p;
  p.compiled = true;
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    p.error = cudaGetErrorString(err);
    n = 0;
  }
  p.device_count = n;
  return p;
}

int cuda_device_count() {
  static const int count = probe_cuda().device_count;
  return count;
}

}  // namespace memlens::detail
