// contiguity: copies made to satisfy layout (contiguous(), a reshape that had to copy,
// an op copying an input a view made non-contiguous), by site, with those views. Every
// such copy is listed; only a habit is a finding: copies in two or more step intervals,
// or, in a trace without steps, two or more copies. A conversion done once at set-up is
// not something to fix.
#include <algorithm>
#include <map>
#include <optional>

#include "analyses.hpp"

namespace memlens::analysis {

namespace {

using profiler::CopyReason;
using profiler::Event;
using profiler::EventKind;

// The rule for one Copy event: the view chain ("" when none) when it is a copy made to
// satisfy layout, nullopt otherwise.
std::optional<std::string> layout_copy_chain(const Event& e, const PassState& s) {
  if (e.kind != EventKind::Copy || e.device != e.copy.src_device) return std::nullopt;
  CopyReason reason = e.copy.reason;
  if (reason != CopyReason::Contiguous && reason != CopyReason::Reshape && reason != CopyReason::OpInternal) return std::nullopt;
  // A copy that materialised an expand has one verdict, the broadcast report's
  // (materialized_expand), not a layout copy too.
  if (s.live.expanded_source(e.copy)) return std::nullopt;
  std::string chain;
  if (const LiveBlock* src = s.live.containing(e.copy.src_device, e.copy.src_address); src && src->storage)
    if (const ViewChain* v = s.live.views(src->storage)) chain = v->text();
  // An op's own copies (an operand BLAS or a convolution needs contiguous) are layout
  // copies only when a view made the input non-contiguous. A conversion to another dtype
  // (reason cast) never is: it is needed whatever the input's layout.
  if (reason == CopyReason::OpInternal && chain.empty()) return std::nullopt;
  return chain;
}

class ContiguityAnalysis final : public Analysis {
 public:
  KindSet after_kinds() const override { return kinds(EventKind::Copy); }
  void after(const Event& e, const PassState& s) override {
    if (e.kind != EventKind::Copy) return;
    std::optional<std::string> layout = layout_copy_chain(e, s);
    if (!layout) return;
    CopyReason reason = e.copy.reason;
    const std::string& chain = *layout;
    Entry& entry = copies_[{s.site, static_cast<int>(reason), chain}];
    LayoutCopy& c = entry.copy;
    if (c.count++ == 0) c.time_ns = s.since_start(e.time_ns);
    if (c.steps == 0 || entry.last_step != s.step) ++c.steps, entry.last_step = s.step;
    c.site = s.site, c.reason = reason, c.view_chain = chain;
    c.bytes += e.copy.bytes;
  }

  void finish(const PassState& s, Report& r) override {
    for (auto& [k, entry] : copies_) {
      LayoutCopy& c = entry.copy;
      c.repeated = s.step > 0 ? c.steps >= 2 : c.count >= 2;
      r.contiguity.copies.push_back(c);
      r.contiguity.count += c.count;
      r.contiguity.bytes += c.bytes;
    }
    std::stable_sort(r.contiguity.copies.begin(), r.contiguity.copies.end(),
                     [](const LayoutCopy& a, const LayoutCopy& b) { return a.bytes > b.bytes; });
  }

 private:
  struct Entry {
    LayoutCopy copy;
    std::uint64_t last_step = 0;
  };
  std::map<std::tuple<SiteId, int, std::string>, Entry> copies_;
};

}  // namespace

std::unique_ptr<Analysis> make_contiguity_analysis() { return std::make_unique<ContiguityAnalysis>(); }

}  // namespace memlens::analysis
