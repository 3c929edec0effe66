#include "cuda_probe.hpp"
#include "memlens/allocator/errors.hpp"

namespace memlens::detail {

CudaProbe probe_cuda() { return {}; }

int cuda_device_count() { return 0; }

StreamEvents& cuda_stream_events() {
  throw DeviceError("memlens was built without CUDA (MEMLENS_CUDA=OFF or no nvcc): there are no CUDA streams");
}

}  // namespace memlens::detail
