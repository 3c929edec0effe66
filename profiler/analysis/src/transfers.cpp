// transfers: copies between devices per site and per step, and the same source data sent
// again in later steps (the seed's "move the data set to the device once"). The same
// data means the same storage, offset and size with nothing copied into that storage in
// between: a staging buffer refilled with copy_ before every send sends new data. A copy
// between two kinds of host memory (pageable `cpu` into pinned `cuda_host`, as a
// DataLoader with pin_memory stages each batch) crosses no bus: not a transfer.
#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <map>

#include "analyses.hpp"

namespace memlens::analysis {

namespace {

using profiler::Event;
using profiler::EventKind;

// Host memory, pageable or pinned, as a trace names its devices.
bool host_memory(const std::string& device) { return device == "cpu" || device == "cuda_host"; }

class TransferAnalysis final : public Analysis {
 public:
  KindSet after_kinds() const override { return kinds(EventKind::Copy, EventKind::FreeRequested); }
  void after(const Event& e, const PassState& s) override {
    if (e.kind == EventKind::FreeRequested) {
      if (s.block && s.block->storage) writes_.erase(s.block->storage);  // its id never comes back
      return;
    }
    const profiler::CopyEvent& c = e.copy;
    // Any copy into a storage makes its content new.
    if (const LiveBlock* dst = s.live.containing(e.device, c.dst_address); dst && dst->storage) ++writes_[dst->storage];
    if (e.device == c.src_device) return;
    const auto& devices = s.trace.header().devices;
    auto name = [&](std::uint8_t d) { return d < devices.size() ? devices[d].name : "device " + std::to_string(d); };
    if (host_memory(name(c.src_device)) && host_memory(name(e.device))) return;
    Site& site = sites_[{s.site, c.src_device, e.device}];
    if (site.total.count == 0) site.total.site = s.site, site.total.from = name(c.src_device), site.total.to = name(e.device);
    ++site.total.count;
    site.total.bytes += c.bytes;
    if (site.last_step != s.step || site.total.steps == 0) ++site.total.steps, site.last_step = s.step;

    if (per_step_.empty() || per_step_.back().step != s.step) per_step_.push_back({s.step, 0, 0});
    ++per_step_.back().count;
    per_step_.back().bytes += c.bytes;

    // The source named by its storage and offset when it is a live block, else its address.
    Source key{s.site, e.device, c.src_address, 0, c.bytes, 0};
    if (const LiveBlock* b = s.live.containing(c.src_device, c.src_address); b && b->storage)
      key = {s.site, e.device, b->storage, c.src_address - b->address, c.bytes, writes_[b->storage]};
    Resend& r = sources_[key];
    if (r.times == 0) r.first_ns = s.since_start(e.time_ns);
    ++r.times;
    if (r.times == 1 || r.last_step != s.step) ++r.steps, r.last_step = s.step;
  }

  void finish(const PassState&, Report& r) override {
    TransferSection& out = r.transfers;
    for (auto& [k, site] : sites_) {
      out.sites.push_back(site.total);
      out.count += site.total.count;
      out.bytes += site.total.bytes;
    }
    std::stable_sort(out.sites.begin(), out.sites.end(),
                     [](const TransferSite& a, const TransferSite& b) { return a.bytes > b.bytes; });
    out.per_step = per_step_;
    std::map<std::tuple<SiteId, std::uint64_t, std::uint8_t>, ResentTransfer> resent;  // by site, size and destination
    for (auto& [k, v] : sources_) {
      if (v.steps < 2) continue;
      ResentTransfer& t = resent[{k.site, k.bytes, k.to}];
      t.site = k.site, t.bytes = k.bytes, t.to = k.to;
      if (t.sources++ == 0 || v.first_ns < t.time_ns) t.time_ns = v.first_ns;
      t.times += v.times;
      t.steps = std::max(t.steps, v.steps);
    }
    for (auto& [k, t] : resent) out.resent.push_back(t);
    std::stable_sort(out.resent.begin(), out.resent.end(),
                     [](const ResentTransfer& a, const ResentTransfer& b) { return a.bytes * a.times > b.bytes * b.times; });
  }

 private:
  struct Site {
    TransferSite total;
    std::uint64_t last_step = 0;
  };
  struct Source {
    SiteId site;
    std::uint8_t to;  // the destination device
    std::uint64_t storage_or_address, offset, bytes;
    std::uint64_t version;  // copies into the storage before this send
    bool operator==(const Source&) const = default;
    template <class H>
    friend H AbslHashValue(H h, const Source& s) {
      return H::combine(std::move(h), s.site, s.to, s.storage_or_address, s.offset, s.bytes, s.version);
    }
  };
  struct Resend {
    std::uint64_t times = 0, steps = 0, last_step = 0, first_ns = 0;
  };
  std::map<std::tuple<SiteId, std::uint8_t, std::uint8_t>, Site> sites_;
  std::vector<StepTransfers> per_step_;
  absl::flat_hash_map<Source, Resend> sources_;
  absl::flat_hash_map<std::uint64_t, std::uint64_t> writes_;  // storage -> copies into it
};

}  // namespace

std::unique_ptr<Analysis> make_transfer_analysis() { return std::make_unique<TransferAnalysis>(); }

}  // namespace memlens::analysis
