#pragma once
// The executables and libraries loaded in this process, with their address ranges and
// build ids, so code addresses recorded now can be symbolised later elsewhere.
#include <vector>

#include "memlens/trace/trace_format.hpp"

namespace memlens::profiler {

std::vector<ModuleInfo> loaded_modules();

}  // namespace memlens::profiler
