#pragma once
// A file mapped read-only into memory: the reader walks a trace of any size without
// copying it, and the kernel pages it in (and out) as the passes go.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "memlens/common/input_file.hpp"
#include "memlens/profiler/trace_format.hpp"

namespace memlens::profiler {

class MappedFile {
 public:
  MappedFile() = default;
  // Throws TraceError "PATH: cannot open: REASON".
  explicit MappedFile(const std::string& path) {
    std::string why;
    int fd = open_regular_file(path, &why);
    if (fd < 0) throw TraceError(path + ": cannot open: " + why);
    struct stat st {};
    if (fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      throw TraceError(path + ": cannot open: " + std::strerror(err));
    }
    size_ = static_cast<std::size_t>(st.st_size);
    if (size_ > 0) {
      void* p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        int err = errno;
        ::close(fd);
        throw TraceError(path + ": cannot map: " + std::strerror(err));
      }
      data_ = static_cast<const char*>(p);
      madvise(p, size_, MADV_SEQUENTIAL);
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data_) munmap(const_cast<char*>(data_), size_);
  }
  MappedFile(MappedFile&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  MappedFile& operator=(MappedFile&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const char* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  const char* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace memlens::profiler
