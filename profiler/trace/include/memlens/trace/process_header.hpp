#pragma once
// The header of a trace recorded from the running process: the recorder and the CUPTI
// collector build theirs here, so both say the same about the program.
#include <string>
#include <vector>

#include "memlens/trace/trace_format.hpp"

namespace memlens::profiler {

// This process's program path and pid, the wall clock now, and what the caller knows:
// its clock's name, its devices (index = the events' device field) and notes.
TraceHeader process_trace_header(std::string clock, std::vector<DeviceInfo> devices, std::string notes = "");

}  // namespace memlens::profiler
