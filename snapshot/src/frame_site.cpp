#include "frame_site.hpp"

#include <fnmatch.h>

#include <cctype>

namespace memlens::snapshot {

bool is_user_python_file(std::string_view file) {
  if (!file.ends_with(".py")) return false;
  for (std::string_view framework : {"/site-packages/", "/dist-packages/", "/torch/"})
    if (file.find(framework) != std::string_view::npos) return false;
  // Python's standard library: .../lib/python3.12/xyz.py
  auto lib = file.find("/lib/python");
  return lib == std::string_view::npos;
}

std::string autograd_node(std::string_view function) {
  auto ns = function.find("torch::autograd::");
  if (ns == std::string_view::npos) return "";
  auto apply = function.find("::apply(", ns);
  if (apply != std::string_view::npos) {
    std::size_t begin = apply;
    while (begin > 0 && (std::isalnum(static_cast<unsigned char>(function[begin - 1])) || function[begin - 1] == '_')) --begin;
    if (begin < apply) return std::string(function.substr(begin, apply - begin));
  }
  return function.find("torch::autograd::Engine::", ns) != std::string_view::npos ? "engine" : "";
}

bool glob_match(const std::string& pattern, const std::string& text) { return fnmatch(pattern.c_str(), text.c_str(), 0) == 0; }

bool frame_matches(const std::string& pattern, std::string_view file, std::string_view function) {
  if (glob_match(pattern, std::string(function))) return true;
  auto slash = file.rfind('/');
  std::string_view stem = file.substr(slash == std::string_view::npos ? 0 : slash + 1);
  if (stem.ends_with(".py")) stem.remove_suffix(3);
  std::string qualified = std::string(stem) + "." + std::string(function);
  return glob_match(pattern, qualified);
}

}  // namespace memlens::snapshot
