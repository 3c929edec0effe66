// The recording and the allocator's trace, merged (allocator_trace_merge.hpp). Three steps:
// the snapshot's events on the recording's clock and devices; each storage the recorder saw
// on a covered device matched to the allocator's block it lived in (same device and
// address, the block alive when the storage was seen); then one pass writing both streams
// in time order, the recorder's own per-storage segments and blocks left out where a block
// stands for them.
#include "memlens/snapshot/allocator_trace_merge.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "memlens/snapshot/py_document.hpp"
#include "memlens/trace/trace_writer.hpp"
#include "snapshot_events.hpp"
#include "snapshot_run.hpp"

namespace memlens::snapshot {

using profiler::Event;
using profiler::EventKind;

namespace {

// A storage seen a little outside its block's life is still that block's: the two clocks
// (the recorder's, PyTorch's approximate one put on the wall clock) agree to microseconds.
constexpr std::uint64_t kClockSlackNs = 2'000'000;
constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();

std::uint64_t key(std::uint8_t device, std::uint64_t address) { return address ^ (std::uint64_t{device} << 56); }

// One of the allocator's blocks: its Alloc event's index and its life.
struct Block {
  std::size_t alloc = 0;
  std::uint64_t born = 0, freed = kNever;
  std::uint64_t storage = 0;  // the recorder's storage matched to it, 0 for none
  bool taken = false;
};

// Ids of the recorded trace, interned again in the merged one.
class IdMap {
 public:
  IdMap(const profiler::TraceReader& from, profiler::TraceWriter& to) : from_(from), to_(to) {}

  std::uint32_t string(std::uint32_t id) {
    if (!id) return 0;
    auto [it, fresh] = strings_.try_emplace(id, 0);
    if (fresh) it->second = to_.intern_string(from_.string(id));
    return it->second;
  }
  std::uint32_t site(std::uint32_t id) {
    if (!id) return 0;
    auto [it, fresh] = sites_.try_emplace(id, 0);
    if (fresh) {
      const profiler::SiteInfo s = from_.site(id);
      it->second = s.file.empty() && s.address ? to_.intern_site_address(s.address)
                                               : to_.intern_site(s.file, s.line, s.function, s.language);
    }
    return it->second;
  }
  std::uint32_t stack(std::uint32_t id) {
    if (!id) return 0;
    auto [it, fresh] = stacks_.try_emplace(id, 0);
    if (fresh) {
      std::vector<std::uint32_t> frames;
      for (std::uint32_t s : from_.stack_sites(id)) frames.push_back(site(s));
      it->second = to_.intern_stack(frames);
    }
    return it->second;
  }
  void remap(Event& e) {
    if (std::uint32_t* p = e.site_field()) *p = site(*p);
    if (std::uint32_t* p = e.stack_field()) *p = stack(*p);
    if (std::uint32_t* p = e.name_field()) *p = string(*p);
  }

 private:
  const profiler::TraceReader& from_;
  profiler::TraceWriter& to_;
  std::unordered_map<std::uint32_t, std::uint32_t> strings_, sites_, stacks_;
};

// The recorder's own view of a storage on a covered device.
struct SeenStorage {
  std::uint64_t time = 0;  // when it was seen
  Event alloc;             // its Alloc event, ids of the recorded trace
};

// An op the recorder wrote, for blocks made inside it.
struct OpSpan {
  std::uint64_t start = 0, end = 0;
  std::uint32_t site = 0;  // of the recorded trace
};

class AllocatorTraceMerge {
 public:
  AllocatorTraceMerge(const profiler::TraceReader& recorded, const SnapshotRun& run, std::int64_t trace_minus_unix_ns,
                      const std::string& out_path)
      : recorded_(recorded), run_(run), offset_ns_(trace_minus_unix_ns), header_(recorded.header()) {
    place_devices();
    header_.notes += std::string(header_.notes.empty() ? "" : "; ") +
                     "CUDA memory as the caching allocator's own trace has it (segments, blocks, OOMs)";
    writer_.emplace(out_path, header_);
    ids_.emplace(recorded_, *writer_);
  }

  AllocatorMergeSummary merge() && {
    read_snapshot_events();
    pair_blocks();
    read_recording();
    match_storages();
    write_merged();
    writer_->close();
    return summary_;
  }

 private:
  // The snapshot's devices among the recording's, by name; one it lacks (pinned host
  // memory) is added.
  void place_devices() {
    for (std::size_t d = 0; d < run_.header.devices.size(); ++d) {
      const profiler::DeviceInfo& info = run_.header.devices[d];
      auto it = std::find_if(header_.devices.begin(), header_.devices.end(),
                             [&](const profiler::DeviceInfo& x) { return x.name == info.name; });
      if (it == header_.devices.end()) {
        if (header_.devices.size() >= 255) throw SnapshotError("too many devices to merge: " + info.name);
        header_.devices.push_back(info);
        it = header_.devices.end() - 1;
      }
      it->capacity = std::max(it->capacity, info.capacity);
      placement_.devices.push_back(static_cast<std::uint8_t>(it - header_.devices.begin()));
    }
    placement_.unix_us_to_trace_ns = [this](std::uint64_t us) {
      const std::int64_t t = static_cast<std::int64_t>(std::min<std::uint64_t>(us, INT64_MAX / 1000) * 1000) + offset_ns_;
      return static_cast<std::uint64_t>(std::max<std::int64_t>(t, 0));
    };
  }

  void read_snapshot_events() {
    snapshot_events(run_, placement_, *writer_, [this](const Event& e) { snapshot_.push_back(e); });
    for (const Event& e : snapshot_) {
      covered_.insert(e.device);
      if (e.kind == EventKind::SegmentAlloc) ++summary_.segments;
      if (e.kind == EventKind::Oom) oom_devices_.insert(e.device);
    }
  }

  // Each Alloc with the free that ends it.
  void pair_blocks() {
    std::unordered_map<std::uint64_t, std::size_t> open;  // key -> index into blocks_
    for (std::size_t i = 0; i < snapshot_.size(); ++i) {
      const Event& e = snapshot_[i];
      if (e.kind == EventKind::Alloc) {
        open[key(e.device, e.alloc.address)] = blocks_.size();
        blocks_.push_back({.alloc = i, .born = e.time_ns});
        block_of_event_[i] = blocks_.size() - 1;
      } else if (e.kind == EventKind::FreeRequested || e.kind == EventKind::FreeCompleted) {
        auto it = open.find(key(e.device, e.free.address));
        if (it == open.end()) continue;
        block_of_event_[i] = it->second;
        if (e.kind == EventKind::FreeCompleted) {
          blocks_[it->second].freed = e.time_ns;
          open.erase(it);
        }
      }
    }
    for (std::size_t b = 0; b < blocks_.size(); ++b) {
      const Event& e = snapshot_[blocks_[b].alloc];
      at_address_[key(e.device, e.alloc.address)].push_back(b);
    }
  }

  void read_recording() {
    recorded_.for_each([&](const Event& e) {
      if (!covered_.contains(e.device)) return;
      if (e.kind == EventKind::Alloc && e.alloc.storage) seen_.push_back({e.time_ns, e});
      if (e.kind == EventKind::Op) {
        ops_[e.device].push_back({e.time_ns, e.time_ns + e.op.duration_ns, e.op.site});
      }
      if (e.kind == EventKind::Oom) ooms_.push_back(e);
    });
    for (auto& [device, spans] : ops_)
      std::sort(spans.begin(), spans.end(), [](const OpSpan& a, const OpSpan& b) { return a.start < b.start; });
  }

  // The block each seen storage lived in: the latest born of those alive when it was seen
  // (a block freed as the next is made at the same address lives up to that moment too),
  // else the nearest in time within the clocks' slack.
  void match_storages() {
    summary_.storages = seen_.size();
    for (std::size_t i = 0; i < seen_.size(); ++i) {
      const Event& alloc = seen_[i].alloc;
      const std::uint64_t t = seen_[i].time;
      auto it = at_address_.find(key(alloc.device, alloc.alloc.address));
      if (it == at_address_.end()) continue;
      Block* best = nullptr;
      std::uint64_t best_gap = kClockSlackNs + 1;
      for (std::size_t b : it->second) {
        Block& block = blocks_[b];
        if (block.taken) continue;
        const std::uint64_t gap = t < block.born ? block.born - t : t > block.freed ? t - block.freed : 0;
        if (gap < best_gap || (gap == 0 && best_gap == 0)) best = &block, best_gap = gap;  // blocks in time order
        if (block.born > t + kClockSlackNs) break;
      }
      if (!best) continue;
      best->taken = true;
      best->storage = alloc.alloc.storage;
      matched_[best->storage] = i;
      ++summary_.matched;
    }
  }

  // The site of the op running on `device` at `t`, in the recorded trace's ids.
  std::uint32_t op_site_at(std::uint8_t device, std::uint64_t t) const {
    auto it = ops_.find(device);
    if (it == ops_.end()) return 0;
    const std::vector<OpSpan>& spans = it->second;
    auto after = std::upper_bound(spans.begin(), spans.end(), t, [](std::uint64_t x, const OpSpan& o) { return x < o.start; });
    // Ops nest (a composite op's parts run inside it): the innermost one still running.
    for (auto i = after; i != spans.begin();) {
      --i;
      if (i->end >= t) return i->site;
      if (t - i->start > kClockSlackNs * 50) break;
    }
    return 0;
  }

  // The snapshot's event as merged: matched blocks carry their storage.
  void write_snapshot_event(std::size_t i) {
    Event e = snapshot_[i];
    auto b = block_of_event_.find(i);
    const Block* block = b == block_of_event_.end() ? nullptr : &blocks_[b->second];
    if (e.kind == EventKind::Alloc) {
      if (block && block->storage) {
        const Event& seen = seen_[matched_.at(block->storage)].alloc;
        e.alloc.storage = block->storage;
        e.alloc.category = seen.alloc.category;
        e.alloc.requested = std::min(e.alloc.size, seen.alloc.requested);
        e.alloc.site = ids_->site(seen.alloc.site);
        e.alloc.stack = ids_->stack(seen.alloc.stack);
      } else {
        ++summary_.unseen_blocks;
        e.alloc.category = Category::Temporary;
        if (std::uint32_t site = op_site_at(e.device, e.time_ns)) e.alloc.site = ids_->site(site);
      }
    } else if ((e.kind == EventKind::FreeRequested || e.kind == EventKind::FreeCompleted) && block) {
      e.free.storage = block->storage;
    } else if (e.kind == EventKind::Oom) {
      ++summary_.ooms;
      // The recorder saw the op that failed (the allocator's trace has no stacks).
      const Event* nearest = nullptr;
      for (const Event& o : ooms_)
        if (o.device == e.device && (!nearest || distance(o.time_ns, e.time_ns) < distance(nearest->time_ns, e.time_ns)))
          nearest = &o;
      if (nearest && distance(nearest->time_ns, e.time_ns) <= kClockSlackNs * 50) {
        e.failure.site = ids_->site(nearest->failure.site);
        e.failure.stack = ids_->stack(nearest->failure.stack);
        e.failure.requested = nearest->failure.requested ? nearest->failure.requested : e.failure.requested;
      }
    }
    writer_->write(e);
  }

  static std::uint64_t distance(std::uint64_t a, std::uint64_t b) { return a > b ? a - b : b - a; }

  // Both streams in time order (the recording's own order kept: an op is stamped at its
  // start but written when it ends, so its place is the latest time written before it).
  void write_merged() {
    std::size_t next = 0;
    std::uint64_t now = 0;
    recorded_.for_each([&](const Event& original) {
      now = std::max(now, original.time_ns);
      while (next < snapshot_.size() && snapshot_[next].time_ns <= now) write_snapshot_event(next++);
      const bool covered = covered_.contains(original.device);
      if (covered && !keep_recorded(original)) return;
      Event e = original;
      ids_->remap(e);
      if (covered && e.kind == EventKind::Alloc) write_segment(EventKind::SegmentAlloc, e, e.alloc.address, e.alloc.size);
      writer_->write(e);
      if (covered && e.kind == EventKind::FreeCompleted) write_segment(EventKind::SegmentFree, e, e.free.address, e.free.size);
    });
    while (next < snapshot_.size()) write_snapshot_event(next++);
  }

  // On a covered device: the recorder's events for storages the allocator's trace has
  // stand down; a storage it lacks (memory from outside the caching allocator) keeps its
  // own segment, written again around its block (write_merged). Its OOMs are the
  // allocator's where the allocator saw any.
  bool keep_recorded(const Event& e) const {
    switch (e.kind) {
      case EventKind::SegmentAlloc:
      case EventKind::SegmentFree:
        return false;
      case EventKind::Alloc:
        return !matched_.contains(e.alloc.storage);
      case EventKind::FreeRequested:
      case EventKind::FreeCompleted:
        return !matched_.contains(e.free.storage);
      case EventKind::Oom:
        return !oom_devices_.contains(e.device);
      default:
        return true;
    }
  }

  void write_segment(EventKind kind, const Event& beside, std::uint64_t address, std::uint64_t size) {
    Event segment(kind, profiler::SegmentEvent{.address = address, .size = size});
    segment.device = beside.device, segment.thread = beside.thread, segment.time_ns = beside.time_ns;
    writer_->write(segment);
  }

  const profiler::TraceReader& recorded_;
  const SnapshotRun& run_;
  std::int64_t offset_ns_;
  profiler::TraceHeader header_;
  EventPlacement placement_;
  std::optional<profiler::TraceWriter> writer_;
  std::optional<IdMap> ids_;
  std::vector<Event> snapshot_;
  std::unordered_set<std::uint8_t> covered_;      // devices the allocator's trace has events on
  std::unordered_set<std::uint8_t> oom_devices_;  // devices it saw an OOM on
  std::vector<Block> blocks_;
  std::unordered_map<std::size_t, std::size_t> block_of_event_;             // snapshot event -> block
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> at_address_;  // key -> blocks, in time order
  std::vector<SeenStorage> seen_;
  std::unordered_map<std::uint64_t, std::size_t> matched_;  // storage -> index into seen_
  std::map<std::uint8_t, std::vector<OpSpan>> ops_;
  std::vector<Event> ooms_;
  AllocatorMergeSummary summary_;
};

}  // namespace

AllocatorMergeSummary merge_allocator_trace(const profiler::TraceReader& recorded, std::string_view snapshot,
                                            SnapshotEncoding encoding, std::int64_t trace_minus_unix_ns,
                                            const std::string& out_path) {
  if (encoding == SnapshotEncoding::NotSnapshot) throw SnapshotError("not a PyTorch memory snapshot (neither pickle nor JSON)");
  PyDocument doc(snapshot, encoding == SnapshotEncoding::Pickle ? PyDocument::Encoding::Pickle : PyDocument::Encoding::Json);
  const SnapshotRun run = read_snapshot_run(doc.root(), recorded.header().program);
  return AllocatorTraceMerge(recorded, run, trace_minus_unix_ns, out_path).merge();
}

}  // namespace memlens::snapshot
