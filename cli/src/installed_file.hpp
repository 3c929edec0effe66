#pragma once
// Files `memlens` runs with (the CUPTI collector, the Python package and its library):
// installed beside this command (relative to it, so an installed tree can move), else in
// the build tree it was built in. Installed first: an installed memlens uses its own files
// even while its build tree is still there.
#include <filesystem>
#include <string>

namespace memlens::cli {

// `installed` (relative to this command's folder) when it exists, else `built` when it
// exists, else "".
inline std::string installed_file(const std::string& built, const std::string& installed) {
  std::error_code ec;
  if (!installed.empty()) {
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
    std::filesystem::path candidate = self / installed;
    if (!ec && std::filesystem::exists(candidate, ec)) return candidate.lexically_normal();
  }
  if (!built.empty() && std::filesystem::exists(built, ec)) return std::filesystem::path(built).lexically_normal();
  return "";
}

}  // namespace memlens::cli
