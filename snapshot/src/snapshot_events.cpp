// The event writer: a snapshot run (snapshot_run.hpp) replayed as trace events. The state
// at the first entry comes first (its blocks `before_recording`); then each entry, with its
// site and stack from its frames (frame_site.hpp), its block's category by the rules of
// snapshot_categories.cpp, and steps where --step-at or --step-at-scope says they end.
#include "snapshot_events.hpp"

#include <algorithm>

#include "frame_site.hpp"
#include "snapshot_categories.hpp"

namespace memlens::snapshot {

using profiler::Event;
using profiler::EventKind;
using profiler::Language;
using Kind = PyValue::Kind;

namespace {

constexpr std::size_t kMaxStackFrames = 1024;  // the trace reader's bound

class SnapshotEventWriter {
 public:
  SnapshotEventWriter(const SnapshotRun& run, const ImportOptions& options, const EventPlacement& placement,
                      profiler::TraceWriter& writer, const EventSink& sink)
      : run_(run),
        options_(options),
        placement_(placement),
        devices_(run.devices),
        categories_(block_categories(run)),
        writer_(&writer),
        sink_(sink) {}

  ImportSummary write() && {
    write_start();
    for (std::size_t i = 0; i < run_.entries.size(); ++i) write_entry(run_.entries[i], categories_[i]);
    if (in_step_frame_) step(last_time_ns_);
    summary_.entries = run_.entries_read;
    summary_.skipped = run_.skipped;
    summary_.devices = devices_.size();
    return summary_;
  }

 private:
  std::uint64_t time_ns(std::uint64_t us) const {
    if (placement_.unix_us_to_trace_ns) return placement_.unix_us_to_trace_ns(us);
    return (us - std::min(us, run_.first_us)) * 1000;
  }
  std::uint64_t time_ns(const Entry& e) const { return time_ns(e.time_us); }
  std::uint8_t device(std::size_t d) const {
    return static_cast<std::uint8_t>(d < placement_.devices.size() ? placement_.devices[d] : d);
  }

  // One frame dict: its site, and what the site rule needs to know of it. Computed once
  // per dict: PyTorch's files share each frame dict among every stack holding it.
  struct Frame {
    std::uint32_t site = 0;
    bool user = false;       // the user's own Python code
    std::uint32_t node = 0;  // the autograd node's site, if the frame names one
  };
  const Frame& frame(const PyValue* f) {
    auto [it, fresh] = frames_.try_emplace(f);
    if (!fresh || !f->is(Kind::Dict)) return it->second;
    const PyValue* file = f->get("filename");
    const PyValue* name = f->get("name");
    const PyValue* line = f->get("line");
    std::string_view file_text = file && file->is(Kind::String) && file->text() != "??" ? std::string_view(file->text()) : "";
    std::string_view name_text = name && name->is(Kind::String) ? std::string_view(name->text()) : "";
    auto line_no = static_cast<std::uint32_t>(line && line->is(Kind::Int) && line->integer > 0 ? line->integer : 0);
    Language lang = file_text.ends_with(".py") ? Language::Python : Language::Native;
    Frame& out = it->second;
    out.site = writer_->intern_site(file_text, line_no, name_text, lang);
    out.user = is_user_python_file(file_text);
    if (std::string n = autograd_node(name_text); !n.empty())
      out.node = writer_->intern_site("autograd:" + n, 0, n, Language::Native);
    return out;
  }

  // Site and stack of a frame list.
  std::pair<std::uint32_t, std::uint32_t> site_and_stack(const PyValue* frames) {
    if (!frames) return {0, 0};
    stack_.clear();
    std::uint32_t user = 0, node = 0;
    for (const PyValue* f : frames->items()) {
      if (stack_.size() == kMaxStackFrames) break;
      const Frame& x = frame(f);
      if (!x.site) continue;
      stack_.push_back(x.site);
      if (!user && x.user) user = x.site;
      if (!node) node = x.node;
    }
    return {user ? user : node, writer_->intern_stack(stack_)};
  }

  bool under_step_frame(const PyValue* frames) {
    if (!frames) return false;
    auto [it, fresh] = step_frames_.try_emplace(frames, false);
    if (!fresh) return it->second;
    for (const PyValue* f : frames->items()) {
      const PyValue* file = f->is(Kind::Dict) ? f->get("filename") : nullptr;
      const PyValue* name = f->is(Kind::Dict) ? f->get("name") : nullptr;
      if (file && name && file->is(Kind::String) && name->is(Kind::String) && file->text().ends_with(".py") &&
          frame_matches(options_.step_at, file->text(), name->text()))
        return it->second = true;
    }
    return false;
  }

  void emit(Event& e) {
    sink_(e);
    ++summary_.events;
    last_time_ns_ = std::max(last_time_ns_, e.time_ns);
  }

  void step(std::uint64_t t) {
    Event e(EventKind::Step, profiler::StepEvent{++summary_.steps});
    e.time_ns = t;
    emit(e);
  }

  void write_start() {
    std::uint32_t before = 0;
    for (std::size_t d = 0; d < run_.start.size(); ++d) {
      const DeviceState& s = run_.start[d];
      for (auto [addr, size] : s.segments) {
        Event e(EventKind::SegmentAlloc,
                profiler::SegmentEvent{.address = addr, .size = size, .stream = 0, .pool = devices_[d].pool_of(addr, size)});
        e.device = device(d);
        e.time_ns = time_ns(run_.first_us);
        emit(e);
        devices_[d].segments[addr] = size;
        devices_[d].reserved += size;
        ++summary_.segments_at_start;
      }
      // In address order, so the trace is the same on every run.
      std::vector<std::pair<std::uint64_t, Block>> blocks(s.blocks.begin(), s.blocks.end());
      std::sort(blocks.begin(), blocks.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (auto& [addr, b] : blocks) {
        auto [site, stack] = site_and_stack(b.frames);
        if (!site) site = before ? before : (before = writer_->intern_site("<before recording>", 0, "", Language::Unknown));
        Event e(EventKind::Alloc, profiler::AllocEvent{.address = addr,
                                                       .segment = devices_[d].segment_of(addr),
                                                       .size = b.size,
                                                       .requested = b.size,
                                                       .category = Category::BeforeRecording,
                                                       .site = site,
                                                       .stack = stack});
        e.device = device(d);
        e.time_ns = time_ns(run_.first_us);
        emit(e);
        devices_[d].blocks[addr] = b;
        devices_[d].allocated += b.size;
        ++summary_.blocks_at_start;
      }
    }
  }

  void write_entry(const Entry& x, Category category) {
    DeviceState& d = devices_[x.device];
    Event e;
    e.time_ns = time_ns(x);
    e.device = device(x.device);
    switch (x.action) {
      case Action::SegmentAlloc:
        e.reset(EventKind::SegmentAlloc);
        e.segment = {.address = x.addr, .size = x.size, .stream = x.stream, .pool = d.pool_of(x.addr, x.size)};
        d.segments[x.addr] = x.size;
        d.reserved += x.size;
        break;
      case Action::SegmentFree:
        e.reset(EventKind::SegmentFree);
        e.segment = {.address = x.addr, .size = x.size, .stream = x.stream, .pool = d.pool_of(x.addr, x.size)};
        d.erase_range(x.addr, x.size);
        d.reserved -= std::min(d.reserved, x.size);
        break;
      case Action::Alloc: {
        if (!options_.step_at.empty()) {
          bool under = under_step_frame(x.frames);
          if (in_step_frame_ && !under) step(e.time_ns);
          in_step_frame_ = under;
        }
        auto [site, stack] = site_and_stack(x.frames);
        e.reset(EventKind::Alloc);
        e.alloc = {.address = x.addr,
                   .segment = d.segment_of(x.addr),
                   .size = x.size,
                   .requested = x.size,
                   .stream = x.stream,
                   .category = category,
                   .site = site,
                   .stack = stack};
        if (auto old = d.blocks.find(x.addr); old != d.blocks.end()) d.allocated -= std::min(d.allocated, old->second.size);
        d.blocks[x.addr] = {x.size, x.frames};
        d.allocated += x.size;
        break;
      }
      case Action::FreeRequested:
        return;  // PyTorch counts a block allocated until its free completes
      case Action::FreeCompleted: {
        auto it = d.blocks.find(x.addr);
        if (it != d.blocks.end()) {
          d.allocated -= std::min(d.allocated, it->second.size);
          d.blocks.erase(it);
        }
        e.reset(EventKind::FreeRequested);
        e.free = {.address = x.addr, .size = x.size, .stream = x.stream};
        emit(e);
        e.kind = EventKind::FreeCompleted;  // the same fields
        break;
      }
      case Action::Oom: {
        auto [site, stack] = site_and_stack(x.frames);
        e.reset(EventKind::Oom);
        e.failure = {.size = x.size,
                     .requested = x.size,
                     .device_free = x.extra,
                     .reserved = d.reserved,
                     .allocated = d.allocated,
                     .stream = x.stream,
                     .site = site,
                     .stack = stack};
        break;
      }
      case Action::Begin:
      case Action::End: {
        e.reset(x.action == Action::Begin ? EventKind::ScopeBegin : EventKind::ScopeEnd);
        const std::string& name = run_.names[x.extra];
        e.scope.name = writer_->intern_string(name);
        emit(e);
        if (x.action == Action::End && !options_.step_at_scope.empty() && glob_match(options_.step_at_scope, name))
          step(e.time_ns);
        return;
      }
      case Action::Other:
        return;
    }
    emit(e);
  }

  const SnapshotRun& run_;
  const ImportOptions& options_;
  const EventPlacement& placement_;
  std::vector<DeviceState> devices_;  // live, from the state at the first entry
  std::vector<Category> categories_;  // each entry's block's (snapshot_categories.hpp)
  std::uint64_t last_time_ns_ = 0;
  bool in_step_frame_ = false;
  std::unordered_map<const PyValue*, Frame> frames_;
  std::vector<std::uint32_t> stack_;  // reused for each entry's stack
  std::unordered_map<const PyValue*, bool> step_frames_;
  profiler::TraceWriter* writer_;  // interns sites, stacks and names
  const EventSink& sink_;
  ImportSummary summary_;
};

}  // namespace

ImportSummary write_snapshot_events(const SnapshotRun& run, const ImportOptions& options, profiler::TraceWriter& writer) {
  const EventSink to_writer = [&writer](const Event& e) { writer.write(e); };
  ImportSummary summary = SnapshotEventWriter(run, options, EventPlacement{}, writer, to_writer).write();
  writer.close();
  summary.events = writer.totals().events;
  return summary;
}

ImportSummary snapshot_events(const SnapshotRun& run, const EventPlacement& placement, profiler::TraceWriter& interner,
                              const EventSink& sink) {
  return SnapshotEventWriter(run, ImportOptions{}, placement, interner, sink).write();
}

}  // namespace memlens::snapshot
