#pragma once
// A fuzzer's bytes as a file the readers can open: an anonymous memory file, named through
// /proc/self/fd, so each input goes through the same open and mapping as a real trace.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memlens/trace/trace_reader.hpp>
#include <string>

namespace memlens::fuzz {

class FuzzInput {
 public:
  FuzzInput(const std::uint8_t* data, std::size_t size) : fd_(memfd_create("memlens-fuzz", MFD_CLOEXEC)) {
    std::size_t done = 0;
    while (fd_ >= 0 && done < size) {
      ssize_t n = ::write(fd_, data + done, size - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
  }
  ~FuzzInput() {
    if (fd_ >= 0) ::close(fd_);
  }
  FuzzInput(const FuzzInput&) = delete;
  FuzzInput& operator=(const FuzzInput&) = delete;
  bool ok() const { return fd_ >= 0; }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

// Opens the bytes as a trace and hands the reader to `use`; a TraceError (the answer to a
// file that is no trace) ends the input quietly, anything else reaches the fuzzer.
template <class Use>
int with_trace(const std::uint8_t* data, std::size_t size, Use&& use) {
  FuzzInput input(data, size);
  if (!input.ok()) return 0;
  try {
    profiler::TraceReader r(input.path());
    use(r);
  } catch (const profiler::TraceError&) {
  }
  return 0;
}

}  // namespace memlens::fuzz
