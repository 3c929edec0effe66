// contiguity: copies made to satisfy layout (contiguous(), a reshape that had to copy,
// an op copying an input a view made non-contiguous), by site, with those views.
#include <algorithm>
#include <map>

#include "analyses.hpp"

namespace memlens::analysis {

namespace {

using profiler::CopyReason;
using profiler::Event;
using profiler::EventKind;

class ContiguityAnalysis final : public Analysis {
 public:
  void after(const Event& e, const PassState& s) override {
    if (e.kind != EventKind::Copy) return;
    auto reason = static_cast<CopyReason>(e.sub);
    if (reason != CopyReason::Contiguous && reason != CopyReason::Reshape && reason != CopyReason::OpInternal) return;
    std::string chain;
    if (const LiveBlock* src = s.live.containing(e.device2, e.address2); src && src->storage)
      if (const ViewChain* v = s.live.views(src->storage)) chain = v->text();
    // An op's own copies (a dtype cast, an accumulator) are layout copies only when the
    // input was made non-contiguous by a view.
    if (reason == CopyReason::OpInternal && chain.empty()) return;
    LayoutCopy& c = copies_[{s.site, static_cast<int>(reason), chain}];
    if (c.count++ == 0) c.time_ns = s.since_start(e.time_ns);
    c.site = s.site, c.reason = reason, c.view_chain = chain;
    c.bytes += e.size;
  }

  void finish(const PassState&, Report& r) override {
    for (auto& [k, c] : copies_) {
      r.contiguity.copies.push_back(c);
      r.contiguity.count += c.count;
      r.contiguity.bytes += c.bytes;
    }
    std::stable_sort(r.contiguity.copies.begin(), r.contiguity.copies.end(),
                     [](const LayoutCopy& a, const LayoutCopy& b) { return a.bytes > b.bytes; });
  }

 private:
  std::map<std::tuple<SiteId, int, std::string>, LayoutCopy> copies_;
};

}  // namespace

std::unique_ptr<Analysis> make_contiguity_analysis() { return std::make_unique<ContiguityAnalysis>(); }

}  // namespace memlens::analysis
