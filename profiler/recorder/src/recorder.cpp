// The recorder: installs itself as the runtime's instrument::Sink and as an observer of
// every registered device's allocator, and writes each thing that happens as one record
// into the calling thread's ring (layouts in ring_records.hpp). The writer thread
// (writer_thread.hpp) turns the records into the trace.
#include "memlens/recorder/recorder.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "memlens/trace/process_header.hpp"
#include "memlens/trace/trace_writer.hpp"
#include "memlens/allocator/allocator.hpp"
#include "memlens/tensor/instrument.hpp"
#include "module_map.hpp"
#include "ring_records.hpp"
#include "stack_walk.hpp"
#include "ring_registry.hpp"
#include "tick_clock.hpp"
#include "writer_thread.hpp"

namespace memlens::profiler {

namespace {

namespace rr = ring_records;

class Recorder final : public instrument::Sink {
 public:
  // One device's allocator events, tagged with its index in the trace's device list.
  struct DeviceObserver final : AllocatorObserver {
    DeviceObserver(Recorder* r, std::uint8_t i, Allocator* a) : rec(r), index(i), allocator(a) {}
    void on_event(const AllocatorEvent& e) override { rec->on_allocator(index, e); }
    Recorder* rec;
    std::uint8_t index;
    Allocator* allocator;
  };

  void start(const std::string& path, const RecordOptions& options) {
    std::lock_guard lock(control_);
    if (running_.load(std::memory_order_relaxed)) throw TraceError(path + ": a recording is already running (to " + path_ + ")");
    // The registered devices, in order: the header's list, one observer each. The list
    // is fixed for the process, so a late event of the last recording can still read it.
    std::call_once(devices_once_, [this] {
      devices_ = allocatable_devices();
      sequences_ = std::vector<std::atomic<std::uint64_t>>(devices_.size());
    });
    std::vector<DeviceInfo> devices;
    for (const Device& d : devices_) {
      Allocator& a = allocator_for(d);
      devices.push_back({d.str(), a.capacity()});
      observers_.push_back(std::make_unique<DeviceObserver>(this, static_cast<std::uint8_t>(observers_.size()), &a));
    }
    std::string why = cuda_unavailable_reason();
    TraceHeader h =
        process_trace_header("steady_clock_ns", std::move(devices), why.empty() ? "" : "cuda is served by sim: " + why);
    h.allocator_config = allocator_for(Device(DeviceType::Sim)).config_string();
    auto writer = std::make_unique<TraceWriter>(path, h, options.events_per_chunk);
    writer->add_modules(loaded_modules());
    path_ = path;
    stack_depth_.store(options.stacks ? std::clamp(options.stack_depth, 1, kMaxFrames) : 0, std::memory_order_relaxed);
    TickClock clock;
    clock.start();     // the writer thread finishes the calibration
    rings_.discard();  // records published after the last recording stopped
    // The allocators' event counts go on across recordings: the writer starts at these.
    std::vector<std::uint64_t> first;
    for (const auto& s : sequences_) first.push_back(s.load(std::memory_order_relaxed));
    // Memory allocated before recording began is not a ghost: describe it first.
    for (auto& o : observers_) describe_existing(*o);
    for (auto& o : observers_) o->allocator->add_observer(o.get());
    writer_thread_.start(std::move(writer), clock, std::chrono::milliseconds(options.flush_interval_ms), std::move(first));
    running_.store(true, std::memory_order_release);
    instrument::set_sink(this);
  }

  void stop() {
    std::lock_guard lock(control_);
    if (!running_.load(std::memory_order_relaxed)) return;
    instrument::set_sink(nullptr);
    running_.store(false, std::memory_order_release);
    for (auto& o : observers_) o->allocator->remove_observer(o.get());
    observers_.clear();
    writer_thread_.stop();
  }

  bool running() const { return running_.load(std::memory_order_acquire); }
  void flush() { writer_thread_.flush(); }

  // ---- the hot paths: each writes one record into this thread's ring.

  void on_allocator(std::uint8_t device, const AllocatorEvent& a) {
    record_allocator(device, a, instrument::current_site(), true);
  }

  void on_view(std::uint64_t tensor, std::uint64_t storage, const Device& d, ViewKind kind, ScalarType dtype,
               const instrument::Dims& sizes, const instrument::Dims& strides, std::int64_t offset) override {
    ThreadRing& ring = rings_.local();
    std::size_t ndim = std::min<std::size_t>(sizes.size(), ShapeRecord::kMaxDims);
    std::size_t n = rr::view_words(ndim);
    rr::put_view(reserve(ring, n), device_index(d), stamp(ring), tensor, storage, kind, dtype, sizes, strides, offset,
                 instrument::current_site(), ndim);
    publish(ring, n);
  }

  void on_copy(const Device& src, const void* src_addr, const Device& dst, const void* dst_addr, std::uint64_t bytes,
               CopyReason reason) override {
    ThreadRing& ring = rings_.local();
    rr::put_copy(reserve(ring, rr::kCopyWords), device_index(src), device_index(dst), stamp(ring), src_addr, dst_addr, bytes,
                 reason, instrument::current_site());
    publish(ring, rr::kCopyWords);
  }

  void on_op(const char* name, const instrument::OpTensor* inputs, int n_inputs, const instrument::OpTensor& output,
             std::uint64_t output_bytes, std::uint64_t start, bool broadcasting) override {
    ThreadRing& ring = rings_.local();
    int n_in = std::min<int>(n_inputs, OpEvent::kMaxInputs);
    std::size_t n = rr::kOpTensors + rr::tensor_words(output);
    std::int64_t largest = 0;
    for (int i = 0; i < n_in; ++i) {
      n += rr::tensor_words(inputs[i]);
      std::int64_t numel = 1;
      for (auto v : *inputs[i].sizes) numel *= v;
      largest = std::max(largest, numel);
    }
    std::int64_t out_numel = 1;
    for (auto v : *output.sizes) out_numel *= v;
    bool broadcast = broadcasting && n_in > 0 && out_numel > largest;
    const std::uint8_t device = device_index(output.device);
    // The op's end: later events of this call are after it.
    std::uint64_t* w = rr::put_op(reserve(ring, n), n, device, fresh_stamp(ring), start, name, output_bytes, broadcast,
                                  instrument::current_site(), n_in);
    w = rr::put_tensor(w, output, device);
    for (int i = 0; i < n_in; ++i) w = rr::put_tensor(w, inputs[i], device_index(inputs[i].device));
    publish(ring, n);
  }

  void on_category(std::uint64_t storage, const Device& d, Category c) override {
    ThreadRing& ring = rings_.local();
    rr::put_category(reserve(ring, rr::kCategoryWords), device_index(d), stamp(ring), storage, c);
    publish(ring, rr::kCategoryWords);
  }

  // An op's start: the thread's latest timestamp within a call (the previous op's end, or
  // the call's start), a fresh one outside any.
  std::uint64_t now_ns() override { return stamp(rings_.local()); }

  // Scopes and steps come from user code, not through the sink: `running_` says whether
  // to record them (a mark racing stop() may land in a ring that start() later discards).
  void mark(EventKind kind, const char* name, std::uint64_t step_number) {
    if (!running()) return;
    ThreadRing& ring = rings_.local();
    const std::size_t n = rr::kMarkWords + sequences_.size();
    std::uint64_t* seen = rr::put_mark(reserve(ring, n), kind, ticks(), name, step_number, sequences_.size());
    // What the allocators did before this mark, as far as this thread can know it (what
    // happened before it in the program's own order, through a join or a lock, is seen).
    for (const auto& s : sequences_) *seen++ = s.load(std::memory_order_relaxed);
    publish(ring, n);
  }

  // Scope names live as long as the recorder: the writer interns them later.
  const char* keep_name(std::string_view name) {
    std::lock_guard lock(names_mu_);
    return names_.emplace(name).first->c_str();
  }

  std::uint64_t next_step() { return ++steps_; }

  RecorderStats stats() { return {rings_.count(), rings_.waits()}; }

 private:
  void record_allocator(std::uint8_t device, const AllocatorEvent& a, const void* site, bool may_stack) {
    ThreadRing& ring = rings_.local();
    bool failure = a.kind == EventKind::AllocFailed || a.kind == EventKind::Oom;
    int depth = may_stack && (a.kind == EventKind::Alloc || failure) ? stack_depth_.load(std::memory_order_relaxed) : 0;
    std::size_t n = failure ? rr::kFailureWords : rr::kAllocatorWords;
    std::uint64_t* w = reserve(ring, n + static_cast<std::size_t>(depth));
    if (depth) depth = frame_pointer_backtrace(w + n, depth);
    // The event's place among its allocator's: called under the allocator's lock (or
    // before any observer is attached), so a load and a store, with no other writer.
    std::atomic<std::uint64_t>& count = sequences_[device];
    const std::uint64_t sequence = count.load(std::memory_order_relaxed);
    count.store(sequence + 1, std::memory_order_relaxed);
    rr::put_allocator(w, device, a, stamp(ring), site, depth, sequence);
    publish(ring, n + static_cast<std::size_t>(depth));
  }

  // The segments and allocated blocks a device's allocator holds now, at time 0 of the trace.
  void describe_existing(const DeviceObserver& o) {
    for (const auto& seg : o.allocator->snapshot()) {
      AllocatorEvent e{EventKind::SegmentAlloc};
      e.pool = seg.pool, e.address = seg.address, e.size = static_cast<std::int64_t>(seg.size), e.stream = seg.stream;
      record_allocator(o.index, e, nullptr, false);
      for (const auto& blk : seg.blocks) {
        if (blk.state != BlockSnapshot::State::Allocated) continue;
        AllocatorEvent a{EventKind::Alloc};
        a.pool = seg.pool, a.address = blk.address, a.segment = seg.address;
        a.size = static_cast<std::int64_t>(blk.size), a.requested = static_cast<std::int64_t>(blk.requested);
        a.stream = seg.stream;
        record_allocator(o.index, a, nullptr, false);
      }
    }
  }

  // A device's index in the trace's list (registered devices are few: a scan is cheaper
  // than a hash). A device that is not registered cannot hold memory; 0 keeps it readable.
  std::uint8_t device_index(const Device& d) const {
    for (std::size_t i = 0; i < devices_.size(); ++i)
      if (devices_[i] == d) return static_cast<std::uint8_t>(i);
    return 0;
  }

  std::uint64_t* reserve(ThreadRing& ring, std::size_t n) {
    return ring.reserve(n, [this] { writer_thread_.wake(); });
  }
  void publish(ThreadRing& ring, std::size_t n) {
    ring.publish(n, [this] { writer_thread_.wake(); });
  }

  // One clock reading per event group (instrument::current_event_group): reading the TSC
  // costs more than the rest of an event (about 13 ns on a virtual machine), so the events
  // of one runtime call share the thread's latest timestamp, which every op refreshes at
  // its end.
  static std::uint64_t stamp(ThreadRing& ring) {
    std::uint64_t group = instrument::current_event_group();
    if (group == 0) return ticks();
    if (ring.stamp_group != group) {
      ring.stamp_group = group;
      ring.stamp_ticks = ticks();
    }
    return ring.stamp_ticks;
  }
  static std::uint64_t fresh_stamp(ThreadRing& ring) {
    ring.stamp_group = instrument::current_event_group();
    ring.stamp_ticks = ticks();
    return ring.stamp_ticks;
  }

  std::mutex control_;  // start and stop
  std::atomic<bool> running_{false};
  std::string path_;
  RingRegistry rings_;
  WriterThread writer_thread_{rings_};
  std::once_flag devices_once_;
  std::vector<Device> devices_;  // index = the trace's device
  // Per device, how many allocator events were recorded (ever): each event's sequence.
  std::vector<std::atomic<std::uint64_t>> sequences_;
  std::vector<std::unique_ptr<DeviceObserver>> observers_;
  std::atomic<int> stack_depth_{0};
  std::mutex names_mu_;
  std::unordered_set<std::string> names_;
  std::atomic<std::uint64_t> steps_{0};
};

// Never destroyed: threads and static tensors may report after main() returns.
Recorder& recorder() {
  static Recorder* r = new Recorder();
  return *r;
}

}  // namespace

void start(const std::string& path, const RecordOptions& options) { recorder().start(path, options); }
void stop() { recorder().stop(); }
void flush() { recorder().flush(); }
bool recording() { return recorder().running(); }
RecorderStats recorder_stats() { return recorder().stats(); }

Scope::Scope(std::string_view name) : name_(recorder().keep_name(name)) { recorder().mark(EventKind::ScopeBegin, name_, 0); }
Scope::~Scope() { recorder().mark(EventKind::ScopeEnd, name_, 0); }

void step() { recorder().mark(EventKind::Step, nullptr, recorder().next_step()); }

}  // namespace memlens::profiler
