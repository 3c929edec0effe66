#pragma once
// The allocator state a trace describes, rebuilt event by event: live blocks and
// segments per device, live bytes per site and category. Every analysis reads it.
#include <absl/container/btree_map.h>
#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <optional>
#include <utility>
#include <vector>

#include "memlens/analysis/report.hpp"
#include "per_site.hpp"

namespace memlens::analysis {

struct LiveBlock {
  std::uint64_t address = 0, size = 0, requested = 0, segment = 0, storage = 0;
  std::uint64_t time_ns = 0, event_index = 0;
  std::uint64_t step = 0;  // step boundaries seen before it was allocated
  SiteId site = 0;
  std::uint32_t stack = 0;  // the trace's stack id (0: none)
  Category category = Category::Unknown;
  bool inferred = false;  // the category is the ops' guess (infer_category), not an event's
  std::int32_t stream = 0;
  std::uint8_t device = 0;
};

// The kinds of layout-changing view taken of a storage, first seen first, at most four
// (transpose, expand, narrow, ...; not view or reshape, which only rename the dims of a
// contiguous tensor).
struct ViewChain {
  std::array<profiler::ViewKind, 4> kinds{};
  std::size_t n = 0;
  bool has(profiler::ViewKind k) const {
    return std::find(kinds.begin(), kinds.begin() + static_cast<std::ptrdiff_t>(n), k) !=
           kinds.begin() + static_cast<std::ptrdiff_t>(n);
  }
  std::string text() const;  // "transpose -> narrow"
};

struct DeviceState {
  absl::btree_map<std::uint64_t, LiveBlock> blocks;        // by address
  absl::btree_map<std::uint64_t, std::uint64_t> segments;  // address -> size
  std::uint64_t allocated = 0, reserved = 0;
  struct Held {
    std::uint64_t bytes = 0, blocks = 0;
  };
  PerSite<std::array<Held, kCategoryCount>> by_site_category;  // live per site and Category
  std::array<std::uint64_t, kCategoryCount> by_category{};     // allocated per Category
  PerSite<std::uint64_t> by_site;                              // allocated per site
  absl::flat_hash_map<std::uint32_t, StackBytes> by_stack;     // allocated per trace stack id
  bool touched = false;
};

class LiveMemory {
 public:
  explicit LiveMemory(std::size_t devices) : devices_(devices) {}

  // Applies one memory event (`site` already mapped to the report's ids). Returns the
  // block an Alloc created or a FreeRequested removed, or whose category a Category or Op
  // event set (valid until the next call).
  const LiveBlock* apply(const profiler::Event& e, SiteId site, std::uint64_t event_index, std::uint64_t step);

  const DeviceState& device(std::uint8_t d) const { return devices_[d]; }
  std::size_t device_count() const { return devices_.size(); }
  // The live block of a storage, or null.
  const LiveBlock* block_of(std::uint64_t storage) const;
  // The views recorded of a live storage, or null.
  const ViewChain* views(std::uint64_t storage) const {
    auto it = views_.find(storage);
    return it == views_.end() ? nullptr : &it->second;
  }
  // The live block holding `address` on device `d`, or null.
  const LiveBlock* containing(std::uint8_t d, std::uint64_t address) const;
  // The source block of a copy that read more bytes than that block holds from a storage
  // an expand viewed: the copy materialised the expand. Null otherwise.
  const LiveBlock* expanded_source(const profiler::CopyEvent& c) const;
  // The largest free range inside device d's reserved segments.
  std::uint64_t largest_free_block(std::uint8_t d) const;
  // Live bytes by site and by category on device d, largest first (sites: at most `top`).
  LiveAt live_at(std::uint8_t d, std::uint64_t time_ns, std::size_t top) const;
  // Live bytes per site over every device, counting blocks allocated after step 0 only.
  const PerSite<std::uint64_t>& stepped_bytes_by_site() const { return stepped_by_site_; }
  // Every live block, in device and address order.
  template <class F>
  void for_each_block(F&& f) const {
    for (const auto& d : devices_)
      for (const auto& [addr, b] : d.blocks) f(b);
  }

 private:
  void account(const LiveBlock& b, std::int64_t sign);
  LiveBlock* block_of(std::uint64_t storage) { return const_cast<LiveBlock*>(std::as_const(*this).block_of(storage)); }
  void set_category(LiveBlock& b, Category c, bool inferred);
  // Names `output` (and what it read) from its inputs' roles, where nothing named them.
  const LiveBlock* infer_category(std::uint64_t output, const std::uint64_t* inputs, std::size_t n);

  std::vector<DeviceState> devices_;
  absl::flat_hash_map<std::uint64_t, std::pair<std::uint8_t, std::uint64_t>> storage_;  // storage -> device, address
  PerSite<std::uint64_t> stepped_by_site_;
  absl::flat_hash_map<std::uint64_t, ViewChain> views_;                // by storage
  static constexpr std::size_t kBornKept = 64;                         // an op's own allocations, with room to spare
  std::vector<std::pair<std::uint32_t, std::uint64_t>> born_unnamed_;  // thread, storage: since the thread's last op
  LiveBlock removed_;
};

}  // namespace memlens::analysis
