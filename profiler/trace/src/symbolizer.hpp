#pragma once
// Code address -> file:line and function, from a trace's module table, with elfutils'
// libdwfl (the way heaptrack symbolises after recording).
#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "memlens/trace/trace_format.hpp"

struct Dwfl;

namespace memlens::profiler {

class Symbolizer {
 public:
  explicit Symbolizer(const std::vector<ModuleInfo>& modules);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;
  // For a return address: the call instruction's line. Unknown parts stay empty.
  SiteInfo resolve(std::uint64_t return_address);
  // Modules holding an address that has no line (code built without -g): its site has a
  // function at best, never a file and line.
  const std::set<std::string>& modules_without_lines() const { return without_lines_; }

 private:
  Dwfl* dwfl_ = nullptr;
  std::unordered_map<std::uint64_t, SiteInfo> cache_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> mismatched_;  // ranges of modules whose file changed
  std::set<std::string> without_lines_;
};

}  // namespace memlens::profiler
