#include "memlens/snapshot/recording.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "memlens/common/input_file.hpp"
#include "memlens/common/mapped_file.hpp"
#include "memlens/snapshot/py_document.hpp"

namespace memlens::snapshot {

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

SnapshotEncoding sniff_snapshot_file(const std::string& path) {
  std::string why;
  int fd = open_regular_file(path, &why);
  if (fd < 0) throw SnapshotError(path + ": cannot open: " + why);
  char head[64];
  ssize_t n = ::read(fd, head, sizeof head);
  ::close(fd);
  return sniff_snapshot(std::string_view(head, n > 0 ? static_cast<std::size_t>(n) : 0));
}

ImportSummary import_snapshot_file(const std::string& path, const std::string& trace_path, const ImportOptions& options) {
  SnapshotEncoding encoding = sniff_snapshot_file(path);
  if (encoding == SnapshotEncoding::NotSnapshot)
    throw SnapshotError(path + ": not a PyTorch memory snapshot (neither pickle nor JSON)");
  try {
    MappedFile file(path);
    return import_snapshot(std::string_view(file.data(), file.size()), encoding, std::filesystem::path(path).filename().string(),
                           trace_path, options, [&](std::size_t consumed) { file.release_before(consumed); });
  } catch (const FileError& e) {
    throw SnapshotError(e.what());
  } catch (const SnapshotError& e) {
    throw SnapshotError(path + ": " + e.what());
  }
}

std::unique_ptr<profiler::TraceReader> open_recording(const std::string& path, const ImportOptions& options) {
  if (sniff_snapshot_file(path) == SnapshotEncoding::NotSnapshot) return std::make_unique<profiler::TraceReader>(path);
  TemporaryTrace trace;
  import_snapshot_file(path, trace.path(), options);
  return std::make_unique<profiler::TraceReader>(trace.path(), path);
}

}  // namespace memlens::snapshot
