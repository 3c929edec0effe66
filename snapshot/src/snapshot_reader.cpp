// The document reader: a snapshot's trace entries and annotations, read and checked,
// merged in time order; then the state at dump (segments and their blocks) rewound by
// what the entries did, to the state at the first entry, so memory that existed before
// recording began is accounted for rather than a ghost.
#include <algorithm>

#include "snapshot_run.hpp"

namespace memlens::snapshot {

using Kind = PyValue::Kind;

namespace {

constexpr std::size_t kMaxDevices = 255;  // events name devices in a byte

[[noreturn]] void bad(const std::string& where, const std::string& why) { throw SnapshotError(where + ": " + why); }

const PyValue& expect(const PyValue* v, Kind k, const std::string& where) {
  if (!v) bad(where, std::string("missing (expected a ") + std::string(kind_name(k)) + ")");
  if (!v->is(k) && !(k == Kind::List && v->is(Kind::Tuple)))
    bad(where, "expected a " + std::string(kind_name(k)) + ", found " + std::string(kind_name(v->kind)));
  return *v;
}

std::uint64_t u64(const PyValue* v, const std::string& where) {
  if (!v) bad(where, "missing (expected an int)");
  try {
    return v->as_u64();
  } catch (const SnapshotError& e) {
    bad(where, e.what());
  }
}

std::string_view text(const PyValue* v, const std::string& where) { return expect(v, Kind::String, where).text(); }

std::string at(const std::string& base, std::size_t i) { return base + "[" + std::to_string(i) + "]"; }
std::string at(const std::string& base, std::string_view key) { return base + "." + std::string(key); }

Action action_of(std::string_view a) {
  if (a == "segment_alloc" || a == "segment_map") return Action::SegmentAlloc;
  if (a == "segment_free" || a == "segment_unmap") return Action::SegmentFree;
  if (a == "alloc") return Action::Alloc;
  if (a == "free_requested" || a == "free") return Action::FreeRequested;
  if (a == "free_completed") return Action::FreeCompleted;
  if (a == "oom") return Action::Oom;
  return Action::Other;  // "snapshot" and anything newer
}

std::string config_text(const PyValue* settings) {
  if (!settings || !settings->is(Kind::Dict)) return "";
  std::string out;
  if (const PyValue* m = settings->get("max_split_size"); m && m->is(Kind::Int) && !m->unsigned64 && m->integer > 0)
    out += "max_split_size_mb:" + std::to_string(m->integer >> 20) + ",";
  // PyTorch keeps divisions per power-of-two interval; memlens' allocator takes one for
  // all, so the largest one stands for them.
  std::int64_t divisions = 0;
  if (const PyValue* r = settings->get("roundup_power2_divisions")) {
    if (r->is(Kind::Int)) divisions = r->integer;
    if (r->is(Kind::Dict))
      for (std::size_t i = 1; i < r->items().size(); i += 2)
        if (r->items()[i]->is(Kind::Int)) divisions = std::max(divisions, r->items()[i]->integer);
    if (r->is(Kind::List))
      for (const PyValue* d : r->items())
        if (d->is(Kind::Int)) divisions = std::max(divisions, d->integer);
  }
  out += "roundup_power2_divisions:" + std::to_string(std::max<std::int64_t>(divisions, 0)) + ",";
  const PyValue* e = settings->get("expandable_segments");
  out += std::string("expandable_segments:") + (e && e->is(Kind::Bool) && e->boolean ? "True" : "False");
  return out;
}

class SnapshotReader {
 public:
  SnapshotReader(const PyValue& root, const std::string& source) : root_(root), source_(source) {}

  SnapshotRun run() && {
    reserve_entries();
    read_segments(segments_list(), "segments", std::nullopt);
    read_entries();
    read_annotations();
    read_host();
    // In place (no buffer the size of the trace); usually already in order.
    auto earlier = [](const Entry& a, const Entry& b) {
      return a.time_us != b.time_us ? a.time_us < b.time_us : a.order < b.order;
    };
    if (!std::is_sorted(entries_.begin(), entries_.end(), earlier)) std::sort(entries_.begin(), entries_.end(), earlier);
    rewind();
    run_.devices = devices_;
    run_.header = header();
    run_.first_us = first_us_;
    run_.names = std::move(names_);
    run_.entries = std::move(entries_);
    run_.start = std::move(start_);
    return std::move(run_);
  }

 private:
  const PyValue* segments_list() const {
    if (root_.is(Kind::List)) return &root_;  // torch.cuda.memory_snapshot() pickled bare
    if (!root_.is(Kind::Dict))
      bad("snapshot", "expected a dict or a list of segments, found " + std::string(kind_name(root_.kind)));
    return root_.get("segments");
  }

  DeviceState& device(std::size_t d, const std::string& where) {
    if (d >= kMaxDevices)
      bad(where, "device " + std::to_string(d) + " out of range (at most " + std::to_string(kMaxDevices - 1) + ")");
    if (d >= devices_.size()) devices_.resize(d + 1);
    return devices_[d];
  }

  // The state at dump: segments and their allocated blocks.
  // Segments at dump with their blocks; each names its device unless `fixed` does.
  void read_segments(const PyValue* list, const std::string& base, std::optional<std::size_t> fixed) {
    if (!list) return;
    const PyValue& segs = expect(list, Kind::List, base);
    for (std::size_t i = 0; i < segs.items().size(); ++i) {
      const std::string w = at(base, i);
      const PyValue& s = expect(segs.items()[i], Kind::Dict, w);
      DeviceState& d = fixed ? devices_[*fixed] : device(u64(s.get("device"), at(w, "device")), at(w, "device"));
      std::uint64_t addr = u64(s.get("address"), at(w, "address"));
      std::uint64_t size = u64(s.get("total_size"), at(w, "total_size"));
      d.segments[addr] = size;
      const PyValue* type = s.get("segment_type");
      d.small_pool[addr] = type && type->is(Kind::String) ? type->text() == "small" : size == kSmallSegmentBytes;
      const PyValue* blocks = s.get("blocks");
      if (!blocks) continue;
      const PyValue& bl = expect(blocks, Kind::List, at(w, "blocks"));
      for (std::size_t k = 0; k < bl.items().size(); ++k) {
        const std::string wb = at(at(w, "blocks"), k);
        const PyValue& b = expect(bl.items()[k], Kind::Dict, wb);
        std::string_view state = text(b.get("state"), at(wb, "state"));
        if (state != "active_allocated" && state != "active_pending_free") continue;
        std::uint64_t baddr = u64(b.get("address"), at(wb, "address"));
        // The trace records requested sizes; so do the blocks that were there at start.
        const PyValue* req = b.get("requested_size");
        std::uint64_t bsize = req ? u64(req, at(wb, "requested_size")) : u64(b.get("size"), at(wb, "size"));
        const PyValue* frames = b.get("frames");
        d.blocks[baddr] = {bsize, frames && frames->is(Kind::List) ? frames : nullptr};
      }
    }
  }

  // One allocation for every entry and annotation, sized by the document.
  void reserve_entries() {
    if (!root_.is(Kind::Dict)) return;
    std::size_t n = 0;
    for (const char* key : {"device_traces", "host_traces"})
      if (const PyValue* traces = root_.get(key))
        for (const PyValue* d : traces->items()) n += d->is(Kind::Dict) ? 1 : d->items().size();
    if (const PyValue* anns = root_.get("external_annotations")) n += anns->items().size();
    if (n > UINT32_MAX) bad("device_traces", "more than 2^32 entries");
    entries_.reserve(n);
  }

  void read_entries() {
    if (!root_.is(Kind::Dict)) return;
    const PyValue* traces = root_.get("device_traces");
    if (!traces) return;
    const std::string base = "device_traces";
    const PyValue& per_device = expect(traces, Kind::List, base);
    for (std::size_t dev = 0; dev < per_device.items().size(); ++dev) {
      const std::string wd = at(base, dev);
      const PyValue& list = expect(per_device.items()[dev], Kind::List, wd);
      if (!list.items().empty()) device(dev, wd);
      read_trace(list, wd, dev);
    }
  }

  // Pinned host memory (newer snapshots: `host_segments`, `host_traces`), as one more
  // device, `cuda_host`, after the GPUs. Its trace is one list of entries, or one per device.
  void read_host() {
    if (!root_.is(Kind::Dict)) return;
    const PyValue* segs = root_.get("host_segments");
    const PyValue* traces = root_.get("host_traces");
    if (!segs && !traces) return;
    host_ = devices_.size();
    device(*host_, "host_traces");
    read_segments(segs, "host_segments", host_);
    if (!traces) return;
    const PyValue& list = expect(traces, Kind::List, "host_traces");
    if (!list.items().empty() && list.items()[0]->is(Kind::List)) {
      for (std::size_t i = 0; i < list.items().size(); ++i)
        read_trace(expect(list.items()[i], Kind::List, at("host_traces", i)), at("host_traces", i), *host_);
    } else {
      read_trace(list, "host_traces", *host_);
    }
  }

  void read_trace(const PyValue& list, const std::string& wd, std::size_t dev) {
    for (std::size_t i = 0; i < list.items().size(); ++i) {
      const std::string w = at(wd, i);
      const PyValue& t = expect(list.items()[i], Kind::Dict, w);
      Entry e;
      e.action = action_of(text(t.get("action"), at(w, "action")));
      e.device = static_cast<std::uint8_t>(dev);
      e.order = static_cast<std::uint32_t>(entries_.size());
      // Old files have no time: one microsecond per entry keeps their order.
      const PyValue* time = t.get("time_us");
      e.time_us = time ? u64(time, at(w, "time_us")) : i;
      ++run_.entries_read;
      if (e.action == Action::Other) {
        ++run_.skipped;
        continue;
      }
      e.addr = u64(t.get("addr"), at(w, "addr"));
      e.size = u64(t.get("size"), at(w, "size"));
      if (const PyValue* s = t.get("stream")) e.stream = stream(s->is(Kind::Int) ? u64(s, at(w, "stream")) : 0);
      if (e.action == Action::Oom) {
        if (const PyValue* f = t.get("device_free")) e.extra = u64(f, at(w, "device_free"));
      }
      const PyValue* frames = t.get("frames");
      if (frames && frames->is(Kind::List)) e.frames = frames;
      entries_.push_back(std::move(e));
    }
  }

  void read_annotations() {
    if (!root_.is(Kind::Dict)) return;
    const PyValue* anns = root_.get("external_annotations");
    if (!anns) return;
    const std::string base = "external_annotations";
    const PyValue& list = expect(anns, Kind::List, base);
    for (std::size_t i = 0; i < list.items().size(); ++i) {
      const std::string w = at(base, i);
      const PyValue& a = expect(list.items()[i], Kind::Dict, w);
      Entry e;
      std::string_view stage = text(a.get("stage"), at(w, "stage"));
      if (stage != "START" && stage != "END") bad(at(w, "stage"), "expected START or END, found '" + std::string(stage) + "'");
      e.action = stage == "START" ? Action::Begin : Action::End;
      e.extra = names_.size();
      names_.emplace_back(text(a.get("name"), at(w, "name")));
      std::uint64_t dev = 0;
      if (const PyValue* d = a.get("device"); d && d->is(Kind::Int)) dev = u64(d, at(w, "device"));
      device(dev, at(w, "device"));
      e.device = static_cast<std::uint8_t>(dev);
      const PyValue* time = a.get("time_us");
      e.time_us = time ? u64(time, at(w, "time_us")) : 0;
      e.order = static_cast<std::uint32_t>(entries_.size());
      entries_.push_back(std::move(e));
    }
  }

  // Undoes the entries, newest first, from the state at dump.
  void rewind() {
    start_ = devices_;
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
      DeviceState& d = start_[it->device];
      switch (it->action) {
        case Action::SegmentAlloc:
          d.erase_range(it->addr, it->size);
          break;
        case Action::SegmentFree:
          d.segments[it->addr] = it->size;
          break;
        case Action::Alloc:
          d.blocks.erase(it->addr);
          break;
        case Action::FreeCompleted:
          d.blocks.try_emplace(it->addr, Block{it->size, nullptr});
          break;
        default:
          break;
      }
    }
    // What follows is tracked live from the start state.
    for (std::size_t i = 0; i < devices_.size(); ++i) {
      devices_[i].segments.clear();
      devices_[i].blocks.clear();
      devices_[i].allocated = devices_[i].reserved = 0;
    }
  }

  profiler::TraceHeader header() {
    profiler::TraceHeader h;
    h.program = source_;
    h.clock = "pytorch_time_us";
    for (const Entry& e : entries_) {
      first_us_ = e.time_us;
      break;
    }
    h.start_unix_ns = static_cast<std::int64_t>(first_us_ * 1000);
    // An OOM says how much the device had: what was reserved then plus what was free.
    std::vector<std::uint64_t> capacity(devices_.size(), 0);
    {
      std::vector<std::uint64_t> reserved(devices_.size(), 0);
      for (std::size_t d = 0; d < start_.size(); ++d)
        for (auto& [a, n] : start_[d].segments) reserved[d] += n;
      for (const Entry& e : entries_) {
        if (e.action == Action::SegmentAlloc) reserved[e.device] += e.size;
        if (e.action == Action::SegmentFree) reserved[e.device] -= std::min(reserved[e.device], e.size);
        if (e.action == Action::Oom) capacity[e.device] = std::max(capacity[e.device], reserved[e.device] + e.extra);
      }
    }
    for (std::size_t d = 0; d < devices_.size(); ++d)
      h.devices.push_back({d == host_ ? "cuda_host" : "cuda:" + std::to_string(d), capacity[d]});
    h.allocator_config = root_.is(Kind::Dict) ? config_text(root_.get("allocator_settings")) : "";
    h.notes =
        "imported from a PyTorch memory snapshot: allocated counts the bytes each request asked for, as "
        "PyTorch's trace records them";
    h.ends_mid_run = true;
    return h;
  }

  // CUDA streams by memlens' small numbers: 0 the default stream, then in order of use.
  std::uint16_t stream(std::uint64_t s) {
    if (s == 0) return 0;
    auto [it, fresh] =
        streams_.try_emplace(s, static_cast<std::uint16_t>(std::min<std::size_t>(streams_.size() + 1, UINT16_MAX)));
    return it->second;
  }

  const PyValue& root_;
  std::string source_;
  std::vector<Entry> entries_;
  std::vector<DeviceState> devices_;  // the state at dump, then each device's pools only
  std::vector<DeviceState> start_;    // the state at the first entry
  std::uint64_t first_us_ = 0;
  std::unordered_map<std::uint64_t, std::uint16_t> streams_;
  std::vector<std::string> names_;   // annotations' names
  std::optional<std::size_t> host_;  // the device of pinned host memory, when the snapshot has one
  SnapshotRun run_;                  // its counts, filled while reading
};

}  // namespace

SnapshotRun read_snapshot_run(const PyValue& root, const std::string& source) { return SnapshotReader(root, source).run(); }

}  // namespace memlens::snapshot
