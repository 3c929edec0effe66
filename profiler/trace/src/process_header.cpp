#include "memlens/trace/process_header.hpp"

#include <unistd.h>

#include <chrono>

namespace memlens::profiler {

TraceHeader process_trace_header(std::string clock, std::vector<DeviceInfo> devices, std::string notes) {
  TraceHeader h;
  char exe[4096] = {};
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  h.program = n > 0 ? std::string(exe, static_cast<std::size_t>(n)) : "?";
  h.pid = getpid();
  h.clock = std::move(clock);
  h.start_unix_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  h.devices = std::move(devices);
  h.notes = std::move(notes);
  return h;
}

}  // namespace memlens::profiler
