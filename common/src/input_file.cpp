#include "memlens/common/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace memlens {

int open_regular_file(const std::string& path, std::string* why) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (why) *why = std::strerror(errno);
    return -1;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    if (why) *why = "not a regular file";
    return -1;
  }
  return fd;
}

}  // namespace memlens
