#include "cuda_probe.hpp"

namespace memlens::detail {

CudaProbe probe_cuda() { return {}; }

}  // namespace memlens::detail
