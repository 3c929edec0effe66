#include "trace_input.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <cstdio>
#include <filesystem>

#include "exit_codes.hpp"
#include "memlens/common/input_file.hpp"
#include "memlens/input/input_file.hpp"

namespace memlens::cli {

input::InputFile open_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UsageError(path + ": is a directory, not a trace");
  try {
    return input::InputFile(path);
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
}

std::unique_ptr<profiler::TraceReader> open_trace(input::InputFile file, const snapshot::ImportOptions& options) {
  try {
    return std::move(file).open(options);
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
}

std::unique_ptr<profiler::TraceReader> open_trace(const std::string& path, const snapshot::ImportOptions& options) {
  return open_trace(open_file(path), options);
}

LoadedTrace load_trace(const std::string& path, const analysis::AnalysisOptions& options, const snapshot::ImportOptions& import) {
  LoadedTrace t;
  t.reader = open_trace(path, import);
  bool tty = isatty(STDERR_FILENO);
  bool shown = false;
  analysis::Progress progress;
  if (tty)
    progress = [&](std::uint64_t done, std::uint64_t total) {
      if (total < (1u << 20)) return;  // quick enough to need no progress
      std::fprintf(stderr, "\rmemlens: reading %s: %3d%%", path.c_str(), static_cast<int>(100 * done / total));
      shown = true;
    };
  try {
    t.report = analysis::analyze(*t.reader, options, progress);
  } catch (const std::exception& e) {
    throw UsageError(path + ": " + e.what());
  }
  if (shown) std::fprintf(stderr, "\r\x1b[K");
  warn_if_incomplete(*t.reader);
  t.report.path = path;
  return t;
}

void warn_if_incomplete(const profiler::TraceReader& trace) {
  std::string problem = trace.problem();
  if (!problem.empty()) std::fprintf(stderr, "memlens: warning: %s: %s\n", trace.path().c_str(), problem.c_str());
}

std::string read_input_file(const std::string& path, std::size_t max_bytes) {
  std::string why;
  int fd = open_regular_file(path, &why);
  if (fd < 0) throw UsageError(path + ": cannot open: " + why);
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    throw UsageError(path + ": cannot open: " + std::strerror(errno));
  }
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    throw UsageError(path + ": too large (" + std::to_string(st.st_size) + " bytes; at most " + std::to_string(max_bytes) + ")");
  }
  std::string out(std::min<std::uint64_t>(max_bytes, static_cast<std::uint64_t>(st.st_size)), '\0');
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

std::string working_dir() {
  std::error_code ec;
  auto p = std::filesystem::current_path(ec);
  return ec ? "" : p.string();
}

}  // namespace memlens::cli
