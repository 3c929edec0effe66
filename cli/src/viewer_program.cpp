#include "viewer_program.hpp"

#include <cstdlib>
#include <filesystem>

namespace memlens::cli {

std::string viewer_program(const std::string& argv0) {
  if (const char* chosen = std::getenv("MEMLENS_VIEWER"); chosen && *chosen) return chosen;
  auto dir = std::filesystem::path(argv0).parent_path();
  std::error_code ec;
  for (auto candidate : {dir / "memlens-viewer", dir / ".." / "viewer" / "memlens-viewer"})
    if (std::filesystem::exists(candidate, ec)) return candidate.string();
  return "memlens-viewer";
}

}  // namespace memlens::cli
