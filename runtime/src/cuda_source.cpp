#include "memlens/runtime/cuda_source.hpp"

#include <cuda_runtime_api.h>

#include <string>

#include "memlens/runtime/errors.hpp"

namespace memlens {

namespace {
void check(cudaError_t err, const std::string& call) {
  if (err != cudaSuccess) throw DeviceError(call + ": " + cudaGetErrorString(err));
}
}  // namespace

bool cuda_source_available() { return true; }

CudaSource::CudaSource(int device) : device_(device) {
  check(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
  std::size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  capacity_ = total;
}

void* CudaSource::acquire(std::size_t bytes) {
  check(cudaSetDevice(device_), "cudaSetDevice(" + std::to_string(device_) + ")");
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, bytes);
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // clear the sticky error so the caller can free the cache and retry
    return nullptr;
  }
  check(err, "cudaMalloc(" + std::to_string(bytes) + ")");
  std::lock_guard lock(mu_);
  used_ += bytes;
  return p;
}

void CudaSource::release(void* ptr, std::size_t bytes) {
  check(cudaSetDevice(device_), "cudaSetDevice(" + std::to_string(device_) + ")");
  check(cudaFree(ptr), "cudaFree");
  std::lock_guard lock(mu_);
  used_ -= bytes;
}

std::size_t CudaSource::used() const {
  std::lock_guard lock(mu_);
  return used_;
}

}  // namespace memlens
