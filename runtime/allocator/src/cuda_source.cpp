#include "memlens/allocator/cuda_source.hpp"

#include <cuda_runtime_api.h>

#include <string>

#include "memlens/allocator/errors.hpp"

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

std::size_t CudaSource::available() const {
  check(cudaSetDevice(device_), "cudaSetDevice(" + std::to_string(device_) + ")");
  std::size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return free;
}

PinnedSource::PinnedSource() = default;

void* PinnedSource::acquire(std::size_t bytes) {
  void* p = nullptr;
  const cudaError_t err = cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return nullptr;
  }
  check(err, "cudaHostAlloc(" + std::to_string(bytes) + ")");
  std::lock_guard lock(mu_);
  used_ += bytes;
  return p;
}

void PinnedSource::release(void* ptr, std::size_t bytes) {
  check(cudaFreeHost(ptr), "cudaFreeHost");
  std::lock_guard lock(mu_);
  used_ -= bytes;
}

std::size_t PinnedSource::capacity() const { return HostSource().capacity(); }

std::size_t PinnedSource::used() const {
  std::lock_guard lock(mu_);
  return used_;
}

}  // namespace memlens
