#include "memlens/common/mapped_file.hpp"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "memlens/common/input_file.hpp"

namespace memlens {

MappedFile::MappedFile(const std::string& path) {
  std::string why;
  int fd = open_regular_file(path, &why);
  if (fd < 0) throw FileError(path + ": cannot open: " + why);
  try {
    *this = MappedFile(fd, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

MappedFile::MappedFile(int fd, const std::string& name) {
  struct stat st {};
  if (fstat(fd, &st) != 0) throw FileError(name + ": cannot open: " + std::strerror(errno));
  size_ = static_cast<std::size_t>(st.st_size);
  identity_ = {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
  if (size_ > 0) {
    void* p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) throw FileError(name + ": cannot map: " + std::strerror(errno));
    data_ = static_cast<const char*>(p);
    madvise(p, size_, MADV_SEQUENTIAL);
  }
}

MappedFile::~MappedFile() {
  if (data_) munmap(const_cast<char*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      released_(std::exchange(o.released_, 0)),
      identity_(o.identity_) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  std::swap(data_, o.data_);
  std::swap(size_, o.size_);
  std::swap(released_, o.released_);
  std::swap(identity_, o.identity_);
  return *this;
}

void MappedFile::release_before(std::size_t offset) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::size_t end = std::min(offset, size_) / page * page;  // released_ stays on a page boundary
  if (end <= released_) return;
  release(released_, end);
  released_ = end;
}

void MappedFile::release(std::size_t from, std::size_t to) const {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::size_t begin = (from + page - 1) / page * page, end = std::min(to, size_) / page * page;
  if (!data_ || end <= begin) return;
  madvise(const_cast<char*>(data_) + begin, end - begin, MADV_DONTNEED);
}

}  // namespace memlens
