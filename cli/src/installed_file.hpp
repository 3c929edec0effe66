#pragma once
// Files `memlens` runs with (the CUPTI collector, the Python package and its library):
// in this build tree, else installed, relative to this command so an installed tree can move.
#include <filesystem>
#include <string>

namespace memlens::cli {

// `built` when it exists, else `installed` (relative to this command's folder) when it
// exists, else "".
inline std::string installed_file(const std::string& built, const std::string& installed) {
  std::error_code ec;
  if (!built.empty() && std::filesystem::exists(built, ec)) return std::filesystem::path(built).lexically_normal();
  if (installed.empty()) return "";
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  std::filesystem::path candidate = self / installed;
  if (std::filesystem::exists(candidate, ec)) return candidate.lexically_normal();
  return "";
}

}  // namespace memlens::cli
