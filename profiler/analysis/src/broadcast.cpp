// broadcast: ops whose output is far larger than their largest input because of
// broadcasting, and copies that materialised an expand (of an expanded storage, and
// larger than its block).
#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <string>

#include "analyses.hpp"

namespace memlens::analysis {

namespace {

using profiler::CopyReason;
using profiler::Event;
using profiler::EventKind;

// Copies that turn a view into new memory; copy_ into an existing tensor and moves between
// devices are not expands materialised.
bool materializes(CopyReason r) {
  return r == CopyReason::Contiguous || r == CopyReason::Reshape || r == CopyReason::Clone || r == CopyReason::OpInternal ||
         r == CopyReason::Cast;
}

class BroadcastAnalysis final : public Analysis {
 public:
  KindSet after_kinds() const override { return kinds(EventKind::Op, EventKind::Copy); }
  void after(const Event& e, const PassState& s) override {
    if (e.kind == EventKind::Op && e.op.broadcast) on_op(e.op, e.time_ns, s);
    else if (e.kind == EventKind::Copy && materializes(e.copy.reason)) on_copy(e, s);
  }

  void finish(const PassState& s, Report& r) override {
    BroadcastSection& out = r.broadcast;
    out.threshold = s.options.broadcast_factor;
    out.floor_bytes = s.options.broadcast_floor;
    out.broadcast_ops = broadcast_ops_;
    for (auto& [k, f] : ops_) out.findings.push_back(f);
    std::sort(out.findings.begin(), out.findings.end(), [](const BroadcastFinding& a, const BroadcastFinding& b) {
      return a.bytes * a.count != b.bytes * b.count ? a.bytes * a.count > b.bytes * b.count : a.site < b.site;
    });
    for (auto& [k, m] : expands_) out.materialized.push_back(m);
    std::sort(out.materialized.begin(), out.materialized.end(), [](const MaterializedExpand& a, const MaterializedExpand& b) {
      return a.bytes * a.count != b.bytes * b.count ? a.bytes * a.count > b.bytes * b.count : a.site < b.site;
    });
  }

 private:
  void on_op(const profiler::OpEvent& op, std::uint64_t time_ns, const PassState& s) {
    ++broadcast_ops_;
    std::uint64_t largest = 0;
    for (std::size_t i = 0; i < op.n_inputs; ++i) largest = std::max(largest, numel(op.inputs[i].sizes));
    double factor = largest ? static_cast<double>(numel(op.output.sizes)) / static_cast<double>(largest) : 0;
    if (factor < s.options.broadcast_factor || op.bytes < s.options.broadcast_floor) return;
    const std::string& name = s.trace.string(op.name);
    std::string key = std::to_string(s.site) + "|" + name + "|" + shape_text(op.output.sizes);
    for (std::size_t i = 0; i < op.n_inputs; ++i) key += "|" + shape_text(op.inputs[i].sizes);
    BroadcastFinding& f = ops_[key];
    if (f.count++ == 0) {
      f.site = s.site;
      f.op = name;
      for (std::size_t i = 0; i < op.n_inputs; ++i) f.inputs.push_back(op.inputs[i].sizes);
      f.output = op.output.sizes;
      f.factor = factor;
      f.bytes = op.bytes;
      f.time_ns = s.since_start(time_ns);
    }
  }

  void on_copy(const Event& e, const PassState& s) {
    const profiler::CopyEvent& c = e.copy;
    const LiveBlock* src = s.live.expanded_source(c);
    if (!src) return;
    MaterializedExpand& m = expands_[{s.site, c.bytes}];
    if (m.count++ == 0) m.time_ns = s.since_start(e.time_ns);
    m.site = s.site, m.bytes = c.bytes, m.source_bytes = src->size;
  }

  std::uint64_t broadcast_ops_ = 0;
  absl::flat_hash_map<std::string, BroadcastFinding> ops_;
  absl::flat_hash_map<std::pair<SiteId, std::uint64_t>, MaterializedExpand> expands_;  // site, bytes
};

}  // namespace

std::unique_ptr<Analysis> make_broadcast_analysis() { return std::make_unique<BroadcastAnalysis>(); }

std::uint64_t numel(const ShapeRecord& s) {
  std::uint64_t n = 1;
  for (int i = 0; i < s.ndim; ++i) n *= static_cast<std::uint64_t>(s.dims[static_cast<std::size_t>(i)]);
  return n;
}

std::string shape_text(const ShapeRecord& s) {
  std::string out = "[";
  for (int i = 0; i < s.ndim; ++i) out += (i ? ", " : "") + std::to_string(s.dims[static_cast<std::size_t>(i)]);
  return out + "]";
}

}  // namespace memlens::analysis
