#pragma once
// A fuzzer's bytes as a file the readers can open: an anonymous memory file, named through
// /proc/self/fd, so each input goes through the same open and mapping as a real trace.
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memlens/trace/trace_format.hpp>
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

// Almost every mutation breaks a checksum, and a reader that stops there is all the fuzzer
// would see. So an input's checksums are made right first (the header's, and each chunk's
// that lies whole in the input, walking the chunks as the reader does): the mutations then
// reach the decoders behind the checksums. Layout: docs/trace-format.md.
inline void fix_checksums(std::string& b) {
  auto crc = [](const char* p, std::size_t n, std::uint32_t seed) {
    return static_cast<std::uint32_t>(crc32(seed, reinterpret_cast<const Bytef*>(p), static_cast<uInt>(n)));
  };
  auto u32 = [&](std::size_t at) {
    std::uint32_t v;
    std::memcpy(&v, b.data() + at, 4);
    return v;
  };
  auto set_u32 = [&](std::size_t at, std::uint32_t v) { std::memcpy(b.data() + at, &v, 4); };
  if (b.size() < 16) return;
  const std::size_t json_len = u32(12);
  if (json_len > b.size() - 16 || b.size() - 16 - json_len < 4) return;
  set_u32(16 + json_len, crc(b.data() + 16, json_len, 0));
  // Chunks: magic, 24 bytes the checksum covers (the stored size at 20 of them), the
  // checksum, then the payload it covers too.
  for (std::size_t at = 16 + json_len + 4; b.size() - at >= 32 && u32(at) == profiler::kChunkMagic;) {
    const std::size_t stored = u32(at + 24);
    if (stored > b.size() - at - 32) break;
    set_u32(at + 28, crc(b.data() + at + 32, stored, crc(b.data() + at + 4, 24, 0)));
    at += 32 + stored;
  }
}

// Opens the bytes (checksums made right) as a trace and hands the reader to `use`; a TraceError (the answer to a
// file that is no trace) ends the input quietly, anything else reaches the fuzzer.
template <class Use>
int with_trace(const std::uint8_t* data, std::size_t size, Use&& use) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  fix_checksums(bytes);
  FuzzInput input(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  if (!input.ok()) return 0;
  try {
    profiler::TraceReader r(input.path());
    use(r);
  } catch (const profiler::TraceError&) {
  }
  return 0;
}

}  // namespace memlens::fuzz
