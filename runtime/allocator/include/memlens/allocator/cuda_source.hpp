#pragma once
// GPU memory from cudaMalloc/cudaFree, a MemorySource for the caching allocator of each
// cuda:N, and page-locked host memory from cudaHostAlloc for pinned tensors. Built when
// the CUDA parts are (MEMLENS_CUDA); without them both throw DeviceError when made.
#include <cstddef>
#include <mutex>

#include "memlens/allocator/memory_source.hpp"

namespace memlens {

class CudaSource final : public MemorySource {
 public:
  // Throws DeviceError naming the CUDA call and its error string (e.g. no GPU).
  explicit CudaSource(int device = 0);
  void* acquire(std::size_t bytes) override;  // nullptr when cudaMalloc reports out of memory
  void release(void* ptr, std::size_t bytes) override;
  Device device() const override { return Device(DeviceType::CUDA, device_); }
  std::size_t capacity() const override { return capacity_; }
  std::size_t used() const override;
  std::size_t available() const override;

 private:
  int device_;
  std::size_t capacity_ = 0;
  mutable std::mutex mu_;
  std::size_t used_ = 0;
};

// Page-locked host memory (cudaHostAlloc/cudaFreeHost), the device cuda_host: copies from
// it to a GPU can run asynchronously.
class PinnedSource final : public MemorySource {
 public:
  PinnedSource();                             // throws DeviceError without CUDA
  void* acquire(std::size_t bytes) override;  // nullptr when the host has no room
  void release(void* ptr, std::size_t bytes) override;
  Device device() const override { return Device(DeviceType::CUDAHost); }
  std::size_t capacity() const override;
  std::size_t used() const override;

 private:
  mutable std::mutex mu_;
  std::size_t used_ = 0;
};

// Whether this build has CudaSource (the CUDA parts were compiled).
bool cuda_source_available();

}  // namespace memlens
