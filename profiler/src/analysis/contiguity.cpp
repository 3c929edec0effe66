// contiguity: copies made to satisfy layout (contiguous(), a reshape that had to copy,
// an op copying an input a view made non-contiguous), by site, with those views.
#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <array>
#include <map>

#include "analyses.hpp"

namespace memlens::analysis {

namespace {

using profiler::CopyReason;
using profiler::Event;
using profiler::EventKind;
using profiler::ViewKind;

bool layout_copy(CopyReason r) {
  return r == CopyReason::Contiguous || r == CopyReason::Reshape || r == CopyReason::OpInternal;
}

// Views that change the layout (reshape and view only rename dims of a contiguous tensor).
bool reorders(ViewKind k) {
  return k != ViewKind::View && k != ViewKind::Reshape && k != ViewKind::Detach && k != ViewKind::Squeeze &&
         k != ViewKind::Unsqueeze;
}

class ContiguityAnalysis final : public Analysis {
 public:
  void after(const Event& e, const PassState& s) override {
    switch (e.kind) {
      case EventKind::View: {
        auto kind = static_cast<ViewKind>(e.sub);
        if (!reorders(kind)) return;
        Chain& c = views_[e.storage];
        if (c.n < c.kinds.size()) c.kinds[c.n++] = kind;
        else std::rotate(c.kinds.begin(), c.kinds.begin() + 1, c.kinds.end()), c.kinds.back() = kind;
        return;
      }
      case EventKind::FreeRequested:
        if (e.storage) views_.erase(e.storage);
        return;
      case EventKind::Copy: {
        auto reason = static_cast<CopyReason>(e.sub);
        if (!layout_copy(reason)) return;
        std::string chain;
        if (const LiveBlock* src = s.live.containing(e.device2, e.address2); src && src->storage) {
          if (auto it = views_.find(src->storage); it != views_.end())
            for (std::size_t i = 0; i < it->second.n; ++i)
              chain += (i ? " -> " : "") + std::string(profiler::view_kind_name(it->second.kinds[i]));
        }
        // An op's own copies (a dtype cast, an accumulator) are layout copies only when
        // the input was made non-contiguous by a view.
        if (reason == CopyReason::OpInternal && chain.empty()) return;
        LayoutCopy& c = copies_[{s.site, static_cast<int>(reason), chain}];
        c.site = s.site, c.reason = reason, c.view_chain = chain;
        ++c.count;
        c.bytes += e.size;
        return;
      }
      default:
        return;
    }
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
  // The last few reordering views taken of a storage.
  struct Chain {
    std::array<ViewKind, 4> kinds{};
    std::size_t n = 0;
  };
  absl::flat_hash_map<std::uint64_t, Chain> views_;
  std::map<std::tuple<SiteId, int, std::string>, LayoutCopy> copies_;
};

}  // namespace

std::unique_ptr<Analysis> make_contiguity_analysis() { return std::make_unique<ContiguityAnalysis>(); }

}  // namespace memlens::analysis
