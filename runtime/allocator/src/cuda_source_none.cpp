#include "memlens/allocator/cuda_source.hpp"
#include "memlens/allocator/errors.hpp"

namespace memlens {

bool cuda_source_available() { return false; }

CudaSource::CudaSource(int device) : device_(device) {
  throw DeviceError("CudaSource: memlens was built without CUDA (MEMLENS_CUDA=OFF or no nvcc)");
}
void* CudaSource::acquire(std::size_t) { return nullptr; }
void CudaSource::release(void*, std::size_t) {}
std::size_t CudaSource::used() const { return used_; }
std::size_t CudaSource::available() const { return 0; }

PinnedSource::PinnedSource() { throw DeviceError("PinnedSource: memlens was built without CUDA (MEMLENS_CUDA=OFF or no nvcc)"); }
void* PinnedSource::acquire(std::size_t) { return nullptr; }
void PinnedSource::release(void*, std::size_t) {}
std::size_t PinnedSource::capacity() const { return 0; }
std::size_t PinnedSource::used() const { return used_; }

}  // namespace memlens
