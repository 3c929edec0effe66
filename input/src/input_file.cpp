#include "memlens/input/input_file.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <new>

#include "memlens/snapshot/py_document.hpp"
#include "memlens/trace/trace_format.hpp"

namespace memlens::input {

namespace {

MappedFile map(const std::string& path) {
  try {
    return MappedFile(path);
  } catch (const FileError& e) {
    throw InputError(e.what());
  }
}

InputFormat sniff(std::string_view head) {
  if (head.size() >= sizeof profiler::kTraceMagic &&
      head.substr(0, sizeof profiler::kTraceMagic) == std::string_view(profiler::kTraceMagic, sizeof profiler::kTraceMagic))
    return InputFormat::Trace;
  switch (snapshot::sniff_snapshot(head.substr(0, 64))) {
    case snapshot::SnapshotEncoding::Pickle:
      return InputFormat::PickleSnapshot;
    case snapshot::SnapshotEncoding::Json:
      return InputFormat::JsonSnapshot;
    case snapshot::SnapshotEncoding::NotSnapshot:
      break;
  }
  return InputFormat::Other;
}

// An anonymous file in memory for a converted snapshot, closed when this goes (a reader
// keeps its own mapping).
class MemoryFile {
 public:
  explicit MemoryFile(const std::string& path) : fd_(memfd_create("memlens-import", MFD_CLOEXEC)) {
    if (fd_ < 0) throw InputError(path + ": cannot make an in-memory trace: " + std::strerror(errno));
  }
  ~MemoryFile() { ::close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::string_view format_name(InputFormat f) {
  switch (f) {
    case InputFormat::Trace:
      return "memlens trace";
    case InputFormat::PickleSnapshot:
      return "pickle snapshot";
    case InputFormat::JsonSnapshot:
      return "JSON snapshot";
    case InputFormat::Other:
      break;
  }
  return "other";
}

InputFile::InputFile(const std::string& path) : path_(path), file_(map(path)), format_(sniff(bytes())) {}

snapshot::ImportSummary InputFile::import(const snapshot::OpenTraceWriter& open_writer, const snapshot::ImportOptions& options) {
  if (format_ != InputFormat::PickleSnapshot && format_ != InputFormat::JsonSnapshot)
    throw InputError(path_ + ": not a PyTorch memory snapshot (neither pickle nor JSON)");
  auto encoding = format_ == InputFormat::PickleSnapshot ? snapshot::SnapshotEncoding::Pickle : snapshot::SnapshotEncoding::Json;
  try {
    // The document is read once, front to back: its pages go as the reader passes them.
    return snapshot::import_snapshot(bytes(), encoding, std::filesystem::path(path_).filename().string(), open_writer, options,
                                     [&](std::size_t consumed) { file_.release_before(consumed); });
  } catch (const snapshot::SnapshotError& e) {
    throw InputError(path_ + ": " + e.what());
  } catch (const std::bad_alloc&) {
    throw InputError(path_ + ": out of memory reading it");
  }
}

std::unique_ptr<profiler::TraceReader> InputFile::open(const snapshot::ImportOptions& options) && {
  if (format_ != InputFormat::PickleSnapshot && format_ != InputFormat::JsonSnapshot)
    return std::make_unique<profiler::TraceReader>(std::move(file_), path_);
  MemoryFile trace(path_);
  import([&](const profiler::TraceHeader& h) { return std::make_unique<profiler::TraceWriter>(trace.fd(), path_, h);
}, options);
MappedFile converted;
try {
  converted = MappedFile(trace.fd(), path_);
} catch (const FileError& e) {
  throw InputError(e.what());
}
file_ = MappedFile();  // the snapshot itself is done with
return std::make_unique<profiler::TraceReader>(std::move(converted), path_);
}  // namespace memlens::input

snapshot::ImportSummary InputFile::import_to(const std::string& trace_path, const snapshot::ImportOptions& options) && {
  return import([&](const profiler::TraceHeader& h) { return std::make_unique<profiler::TraceWriter>(trace_path, h); }, options);
}

std::unique_ptr<profiler::TraceReader> open_input(const std::string& path, const snapshot::ImportOptions& options) {
  return InputFile(path).open(options);
}

}  // namespace memlens::input
