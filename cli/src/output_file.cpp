#include "output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "exit_codes.hpp"

namespace memlens::cli {

namespace {

namespace fs = std::filesystem;

mode_t current_umask() {
  mode_t m = ::umask(022);
  ::umask(m);
  return m;
}

}  // namespace

OutputFile::OutputFile(std::string path, const std::vector<std::string>& inputs, const std::string& flag) {
  if (path.empty() || path == "-") return;
  path_ = std::move(path);
  auto fail = [&](const std::string& why) { return UsageError(flag + " " + path_ + ": " + why); };
  struct stat out {};
  const bool exists = ::stat(path_.c_str(), &out) == 0;
  if (exists) {
    for (const auto& in : inputs) {
      struct stat st {};
      if (::stat(in.c_str(), &st) == 0 && st.st_dev == out.st_dev && st.st_ino == out.st_ino)
        throw fail(in == path_ ? "is an input of this command; refusing to overwrite it"
                               : "is the same file as the input " + in + "; refusing to overwrite it");
    }
    if (S_ISDIR(out.st_mode)) throw fail("is a directory");
  }
  if (exists && !S_ISREG(out.st_mode)) {
    // A device or a FIFO is written in place: there is nothing to rename over.
    file_.open(path_, std::ios::binary | std::ios::out);
    if (!file_) throw fail(std::string("cannot write: ") + std::strerror(errno));
    return;
  }
  std::error_code ec;
  fs::path dest = exists ? fs::canonical(path_, ec) : fs::path(path_);
  if (ec) throw fail("cannot resolve: " + ec.message());
  destination_ = dest.string();
  fs::path dir = dest.parent_path().empty() ? fs::path(".") : dest.parent_path();
  std::string tmpl = (dir / ("." + dest.filename().string() + ".XXXXXX")).string();
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw fail(std::string("cannot write: ") + std::strerror(errno));
  // mkstemp makes 0600; the file gets the mode it had, or what a plain create would give.
  ::fchmod(fd, exists ? (out.st_mode & 07777) : (0666 & ~current_umask()));
  ::close(fd);
  temporary_ = tmpl;
  file_.open(temporary_, std::ios::binary | std::ios::out | std::ios::trunc);
  if (!file_) {
    std::remove(temporary_.c_str());
    throw fail(std::string("cannot write: ") + std::strerror(errno));
  }
}

OutputFile::~OutputFile() {
  if (!temporary_.empty() && !committed_) {
    file_.close();
    std::remove(temporary_.c_str());
  }
}

std::ostream& OutputFile::stream() { return path_.empty() ? std::cout : static_cast<std::ostream&>(file_); }

void OutputFile::commit() {
  if (path_.empty()) {
    std::cout.flush();
    return;
  }
  file_.flush();
  const bool written = static_cast<bool>(file_);
  file_.close();
  if (!written || file_.fail()) throw UsageError(path_ + ": cannot write: " + std::strerror(errno));
  if (!temporary_.empty() && std::rename(temporary_.c_str(), destination_.c_str()) != 0)
    throw UsageError(path_ + ": cannot write: " + std::strerror(errno));
  committed_ = true;
}

void emit(OutputFile& out, const std::string& text) {
  if (!(out.stream() << text)) throw UsageError(out.path() + ": cannot write: " + std::strerror(errno));
  out.commit();
}

bool color_wanted(const std::string& format, const std::string& output) {
  const char* no_color = std::getenv("NO_COLOR");
  return format == "text" && (output.empty() || output == "-") && isatty(STDOUT_FILENO) && !(no_color && *no_color);
}

}  // namespace memlens::cli
