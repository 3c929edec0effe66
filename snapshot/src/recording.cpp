#include "memlens/snapshot/recording.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "memlens/common/input_file.hpp"
#include "memlens/snapshot/py_document.hpp"

namespace memlens::snapshot {

std::string read_whole_file(const std::string& path) {
  std::string why;
  int fd = open_regular_file(path, &why);
  if (fd < 0) throw SnapshotError(path + ": cannot open: " + why);
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw SnapshotError(path + ": cannot open: " + std::strerror(err));
  }
  // Sized by the file, and never read past what it held when opened.
  std::string out(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  out.resize(got);
  return out;
}

namespace {

// A trace file in the temporary directory, removed when this goes out of scope (an open
// reader keeps its mapping).
class TemporaryTrace {
 public:
  TemporaryTrace() {
    std::error_code ec;
    auto dir = std::filesystem::temp_directory_path(ec);
    path_ = (ec ? std::filesystem::path("/tmp") : dir) / "memlens-import-XXXXXX";
    std::string p = path_.string();
    int fd = mkstemp(p.data());
    if (fd < 0) throw SnapshotError("cannot create a temporary trace in " + path_.parent_path().string() + ": " + std::strerror(errno));
    ::close(fd);
    path_ = p;
  }
  ~TemporaryTrace() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  TemporaryTrace(const TemporaryTrace&) = delete;
  TemporaryTrace& operator=(const TemporaryTrace&) = delete;
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace

std::unique_ptr<profiler::TraceReader> open_recording(const std::string& path, const ImportOptions& options) {
  std::string head;
  {
    std::string why;
    int fd = open_regular_file(path, &why);
    if (fd < 0) throw SnapshotError(path + ": cannot open: " + why);
    head.resize(64);
    ssize_t n = ::read(fd, head.data(), head.size());
    ::close(fd);
    head.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  }
  SnapshotEncoding encoding = sniff_snapshot(head);
  if (encoding == SnapshotEncoding::NotSnapshot) return std::make_unique<profiler::TraceReader>(path);
  std::string bytes = read_whole_file(path);
  TemporaryTrace trace;
  try {
    import_snapshot(bytes, encoding, std::filesystem::path(path).filename().string(), trace.path(), options);
  } catch (const SnapshotError& e) {
    throw SnapshotError(path + ": " + e.what());
  }
  return std::make_unique<profiler::TraceReader>(trace.path(), path);
}

}  // namespace memlens::snapshot
