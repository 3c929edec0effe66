#pragma once
// Which device really serves a request: the naming is the floor's (memlens/common/device.hpp).
#include <string>

#include "memlens/common/device.hpp"

namespace memlens {

// The device that really serves `d`. A request for cuda without a usable CUDA backend is
// served by sim, said once on stderr; with MEMLENS_DEVICE=cuda it throws instead.
Device resolve(const Device& d);
// The accelerator the process uses by default: MEMLENS_DEVICE (cpu|sim|cuda), else cuda
// resolved as above.
Device default_device();
// Why cuda is not available ("" when it is); used in notices and skipped GPU tests.
std::string cuda_unavailable_reason();

}  // namespace memlens
