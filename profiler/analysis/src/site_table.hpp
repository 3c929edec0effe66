#pragma once
// Trace site ids mapped to a report's sites, resolving each once and merging ids that
// resolve to the same line (several return addresses on one line are one site). An id the
// trace's table does not define is "no site": the cache is sized by the table, never by an id.
#include <absl/container/flat_hash_map.h>

#include <string>
#include <vector>

#include "memlens/analysis/report.hpp"
#include "memlens/trace/trace_reader.hpp"

namespace memlens::analysis {

class SiteTable {
 public:
  SiteTable(const profiler::TraceReader& trace, std::vector<SiteRef>& sites) : trace_(trace), sites_(sites) {}
  SiteId map(std::uint32_t id) {
    if (id == 0 || id >= trace_.site_count()) return 0;
    if (id >= cache_.size()) cache_.resize(trace_.site_count(), kUnmapped);
    if (cache_[id] != kUnmapped) return cache_[id];
    profiler::SiteInfo info = trace_.site(id);
    SiteId out = 0;
    if (!info.file.empty()) {
      // Line 0 is "no line" (an autograd node, a frame without line info).
      SiteRef ref{info.line ? info.file + ":" + std::to_string(info.line) : info.file, info.function};
      auto [it, fresh] = by_ref_.try_emplace(ref.location + "\n" + ref.function, static_cast<SiteId>(sites_.size()));
      if (fresh) sites_.push_back(std::move(ref));
      out = it->second;
    }
    return cache_[id] = out;
  }

 private:
  static constexpr SiteId kUnmapped = ~SiteId{0};
  const profiler::TraceReader& trace_;
  std::vector<SiteRef>& sites_;
  std::vector<SiteId> cache_;
  absl::flat_hash_map<std::string, SiteId> by_ref_;
};

// Trace stack ids mapped to a report's stacks, each resolved once, frame by frame.
class StackTable {
 public:
  StackTable(const profiler::TraceReader& trace, std::vector<StackRef>& stacks) : trace_(trace), stacks_(stacks) {}
  StackId map(std::uint32_t id) {
    if (id == 0) return 0;
    auto [it, fresh] = ids_.try_emplace(id, 0);
    if (!fresh) return it->second;
    StackRef ref;
    for (const profiler::SiteInfo& f : trace_.stack(id)) {
      std::string location = f.file.empty() ? "" : f.line ? f.file + ":" + std::to_string(f.line) : f.file;
      ref.frames.push_back({std::move(location), f.function, std::string(profiler::language_name(f.language))});
    }
    if (ref.frames.empty()) return 0;
    it->second = static_cast<StackId>(stacks_.size());
    stacks_.push_back(std::move(ref));
    return it->second;
  }
  // Every trace stack id in `at` becomes a report stack id.
  void map_all(LiveAt& at) {
    for (StackBytes& s : at.by_stack) s.stack = map(s.stack);
  }

 private:
  const profiler::TraceReader& trace_;
  std::vector<StackRef>& stacks_;
  absl::flat_hash_map<std::uint32_t, StackId> ids_;
};

}  // namespace memlens::analysis
