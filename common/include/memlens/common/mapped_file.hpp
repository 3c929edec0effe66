#pragma once
// A file mapped read-only into memory: a reader walks a file of any size without copying
// it, and the kernel pages it in (and out) as the reader goes. Only a regular file is
// mapped (open_regular_file).
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "memlens/common/error.hpp"

namespace memlens {

// "PATH: cannot open: REASON" (one line).
class FileError : public Error {
 public:
  using Error::Error;
};

class MappedFile {
 public:
  MappedFile() = default;
  // Throws FileError.
  explicit MappedFile(const std::string& path);
  // Maps the open file `fd` as it is now (the caller keeps and closes it); `name` in errors.
  MappedFile(int fd, const std::string& name);
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const char* data() const { return data_; }
  std::size_t size() const { return size_; }
  // The file mapped (st_dev, st_ino): a reader of a path tells a replaced file by it.
  std::pair<std::uint64_t, std::uint64_t> identity() const { return identity_; }
  // A one-pass reader is done with the bytes before `offset`: their pages are dropped
  // (read again from the file if ever touched), so the mapping stops counting in RSS.
  void release_before(std::size_t offset);
  // The pages wholly inside [from, to) are dropped, whatever was dropped before: a reader
  // that passes over the file again drops each part as it leaves it.
  void release(std::size_t from, std::size_t to) const;

 private:
  const char* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t released_ = 0;
  std::pair<std::uint64_t, std::uint64_t> identity_{};
};

}  // namespace memlens
