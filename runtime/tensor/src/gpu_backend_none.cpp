// A build without a GPU backend (MEMLENS_CUDA=OFF, or no nvcc): no tensor is ever on a GPU.
#include "gpu_kernels.hpp"

namespace memlens::detail {

GpuKernels* gpu_backend() { return nullptr; }

}  // namespace memlens::detail
