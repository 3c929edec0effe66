#include "memlens/profiler/recorder.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <pthread.h>

#include <array>
#include <atomic>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "memlens/profiler/trace_writer.hpp"
#include "memlens/runtime/allocator.hpp"
#include "memlens/runtime/instrument.hpp"
#include "memlens/runtime/memory_source.hpp"
#include "module_map.hpp"
#include "thread_ring.hpp"

namespace memlens::profiler {

namespace {

std::uint64_t ticks() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

std::uint64_t steady_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

// Native stack frames an allocation event may carry (MEMLENS_STACK_DEPTH is clamped to it).
constexpr int kMaxFrames = 32;

// This thread's stack bounds, so the frame-pointer walk never reads outside it.
struct StackBounds {
  std::uintptr_t lo = 0, hi = 0;
};

StackBounds thread_stack_bounds() {
  StackBounds b;
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* addr = nullptr;
    std::size_t size = 0;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
      b.lo = reinterpret_cast<std::uintptr_t>(addr);
      b.hi = b.lo + size;
    }
    pthread_attr_destroy(&attr);
  }
  return b;
}

// Return addresses by walking the frame-pointer chain (memlens builds with
// -fno-omit-frame-pointer): tens of nanoseconds where the unwinder takes microseconds.
// A frame without a frame pointer ends the walk early; nothing outside the stack is read.
int frame_pointer_backtrace(std::uint64_t* out, int max) {
  static thread_local StackBounds bounds = thread_stack_bounds();
  auto* fp = static_cast<std::uintptr_t*>(__builtin_frame_address(0));
  int n = 0;
  while (n < max) {
    auto at = reinterpret_cast<std::uintptr_t>(fp);
    if (at < bounds.lo || at + 2 * sizeof(void*) > bounds.hi || (at & (sizeof(void*) - 1))) break;
    std::uint64_t ret = fp[1];
    if (!ret) break;
    out[n++] = ret;
    auto* next = reinterpret_cast<std::uintptr_t*>(fp[0]);
    if (next <= fp) break;  // the chain must go up the stack
    fp = next;
  }
  return n;
}

std::uint8_t device_index(const Device& d) {
  switch (d.type()) {
    case DeviceType::CPU: return 0;
    case DeviceType::Sim: return 1;
    case DeviceType::CUDA: return static_cast<std::uint8_t>(2 + d.index());
  }
  return 0;
}

// A shape in a record: its length, then its dims (deeper tensors keep their first 8).
std::uint64_t* put_dims(std::uint64_t* w, const instrument::Dims& dims) {
  std::size_t n = std::min<std::size_t>(dims.size(), ShapeRecord::kMaxDims);
  *w++ = n;
  for (std::size_t i = 0; i < n; ++i) *w++ = static_cast<std::uint64_t>(dims[i]);
  return w;
}
std::size_t dims_words(const instrument::Dims& dims) {
  return 1 + std::min<std::size_t>(dims.size(), ShapeRecord::kMaxDims);
}
const std::uint64_t* get_dims(const std::uint64_t* w, ShapeRecord& r) {
  r.ndim = static_cast<std::uint8_t>(*w++);
  for (std::size_t i = 0; i < r.ndim; ++i) r.dims[i] = static_cast<std::int64_t>(*w++);
  return w;
}

class Recorder final : public instrument::Sink {
 public:
  // Allocator events of one device, tagged with its index.
  struct DeviceObserver final : AllocatorObserver {
    Recorder* rec = nullptr;
    std::uint8_t device = 0;
    void on_event(const AllocatorEvent& e) override { rec->on_allocator(device, e); }
  };

  void start(const std::string& path, const RecordOptions& options) {
    std::lock_guard lock(control_);
    if (running_) throw TraceError(path + ": a recording is already running (to " + path_ + ")");
    Allocator& cpu = allocator_for(kCPU);
    Allocator& sim = allocator_for(Device(DeviceType::Sim));
    TraceHeader h;
    char exe[4096] = {};
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    h.program = n > 0 ? std::string(exe, static_cast<std::size_t>(n)) : "?";
    h.pid = getpid();
    h.clock = "steady_clock_ns";
    h.start_unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
    h.devices = {{"cpu", HostSource().capacity()}, {"sim:0", sim_capacity_from_env()}};
    h.allocator_config = sim.config_string();
    std::string why = cuda_unavailable_reason();
    if (!why.empty()) h.notes = "cuda is served by sim: " + why;
    writer_ = std::make_unique<TraceWriter>(path, h, options.events_per_chunk);
    name_ids_.clear();  // ids belong to one trace file
    writer_->add_modules(loaded_modules());
    path_ = path;
    flush_interval_ = std::chrono::milliseconds(options.flush_interval_ms);
    stack_depth_ = options.stacks ? std::clamp(options.stack_depth, 1, kMaxFrames) : 0;

    calibrate();
    running_ = true;
    stop_requested_ = false;
    // Memory allocated before recording began is not a ghost: describe it first.
    for (auto [alloc, dev] : {std::pair{&cpu, std::uint8_t{0}}, {&sim, std::uint8_t{1}}}) {
      for (const auto& seg : alloc->snapshot()) {
        AllocatorEvent e{EventKind::SegmentAlloc};
        e.pool = seg.pool, e.address = seg.address, e.size = static_cast<std::int64_t>(seg.size);
        e.stream = seg.stream;
        record_allocator(dev, EventKind::SegmentAlloc, e, nullptr, false);
        for (const auto& blk : seg.blocks) {
          if (blk.state != BlockSnapshot::State::Allocated) continue;
          AllocatorEvent a{EventKind::Alloc};
          a.pool = seg.pool, a.address = blk.address, a.segment = seg.address;
          a.size = static_cast<std::int64_t>(blk.size), a.requested = static_cast<std::int64_t>(blk.requested);
          a.stream = seg.stream;
          record_allocator(dev, EventKind::Alloc, a, nullptr, false);
        }
      }
    }
    for (std::uint8_t i = 0; i < 2; ++i) {
      observers_[i].rec = this;
      observers_[i].device = i;
    }
    cpu.add_observer(&observers_[0]);
    sim.add_observer(&observers_[1]);
    allocators_ = {&cpu, &sim};
    instrument::set_sink(this);
    thread_ = std::thread([this] { run(); });
  }

  void stop() {
    std::lock_guard lock(control_);
    if (!running_) return;
    instrument::set_sink(nullptr);
    for (std::size_t i = 0; i < allocators_.size(); ++i) allocators_[i]->remove_observer(&observers_[i]);
    {
      std::lock_guard l(wake_mu_);
      stop_requested_ = true;
    }
    wake_.notify_all();
    thread_.join();
    writer_->close();
    writer_.reset();
    running_ = false;
  }

  bool running() const { return running_; }

  // Blocks until everything published before the call is in the file.
  void flush() {
    std::unique_lock l(wake_mu_);
    if (!running_) return;
    std::uint64_t want = ++flush_requested_;
    wake_.notify_all();
    flushed_cv_.wait(l, [&] { return flush_done_ >= want || stop_requested_; });
  }

  // ---- the hot paths: each writes one record into this thread's ring (layouts in
  // docs/architecture.md, "Recording"); decode() reads them back on the writer thread.

  void on_allocator(std::uint8_t device, const AllocatorEvent& a) {
    record_allocator(device, a.kind, a, instrument::current_site(), true);
  }

  void on_view(std::uint64_t tensor, std::uint64_t storage, const Device& d, instrument::ViewKind kind, ScalarType dtype,
               const instrument::Dims& sizes, const instrument::Dims& strides, std::int64_t offset) override {
    ThreadRing& ring = local();
    std::size_t ndim = std::min<std::size_t>(sizes.size(), ShapeRecord::kMaxDims);
    std::size_t n = 6 + 2 * ndim;
    std::uint64_t* w = reserve(ring, n);
    w[0] = RecordHeader{static_cast<std::uint8_t>(EventKind::View), device_index(d), static_cast<std::uint8_t>(kind),
                        static_cast<std::uint8_t>(dtype), static_cast<std::uint16_t>(n),
                        static_cast<std::uint16_t>(ndim)}.pack();
    w[1] = stamp(ring);
    w[2] = tensor, w[3] = storage, w[4] = static_cast<std::uint64_t>(offset);
    w[5] = reinterpret_cast<std::uint64_t>(instrument::current_site());
    for (std::size_t i = 0; i < ndim; ++i) {
      w[6 + i] = static_cast<std::uint64_t>(sizes[i]);
      w[6 + ndim + i] = static_cast<std::uint64_t>(i < strides.size() ? strides[i] : 0);
    }
    publish(ring, n);
  }

  void on_copy(const Device& src, const void* src_addr, const Device& dst, const void* dst_addr, std::uint64_t bytes,
               instrument::CopyReason reason) override {
    ThreadRing& ring = local();
    std::uint64_t* w = reserve(ring, 6);
    w[0] = RecordHeader{static_cast<std::uint8_t>(EventKind::Copy), device_index(dst), static_cast<std::uint8_t>(reason),
                        0, 6, device_index(src)}.pack();
    w[1] = stamp(ring);
    w[2] = reinterpret_cast<std::uint64_t>(dst_addr), w[3] = reinterpret_cast<std::uint64_t>(src_addr), w[4] = bytes;
    w[5] = reinterpret_cast<std::uint64_t>(instrument::current_site());
    publish(ring, 6);
  }

  void on_op(const char* name, const instrument::Dims* const* inputs, int n_inputs, const instrument::Dims& output,
             std::uint64_t output_bytes, const Device& d, std::uint64_t start, bool broadcasting) override {
    ThreadRing& ring = local();
    int n_in = std::min(n_inputs, 4);
    std::size_t n = 6 + dims_words(output);
    std::int64_t largest = 0;
    for (int i = 0; i < n_in; ++i) {
      n += dims_words(*inputs[i]);
      std::int64_t numel = 1;
      for (auto v : *inputs[i]) numel *= v;
      largest = std::max(largest, numel);
    }
    std::int64_t out_numel = 1;
    for (auto v : output) out_numel *= v;
    bool broadcast = broadcasting && n_in > 0 && out_numel > largest;
    std::uint64_t* w = reserve(ring, n);
    w[0] = RecordHeader{static_cast<std::uint8_t>(EventKind::Op), device_index(d), 0, broadcast,
                        static_cast<std::uint16_t>(n), static_cast<std::uint16_t>(n_in)}.pack();
    w[1] = fresh_stamp(ring);  // the op's end: later events of this call are after it
    w[2] = start, w[3] = reinterpret_cast<std::uint64_t>(name), w[4] = output_bytes;
    w[5] = reinterpret_cast<std::uint64_t>(instrument::current_site());
    std::uint64_t* p = put_dims(w + 6, output);
    for (int i = 0; i < n_in; ++i) p = put_dims(p, *inputs[i]);
    publish(ring, n);
  }

  void on_category(std::uint64_t storage, const Device& d, instrument::Category c) override {
    ThreadRing& ring = local();
    std::uint64_t* w = reserve(ring, 3);
    w[0] = RecordHeader{static_cast<std::uint8_t>(EventKind::Category), device_index(d), static_cast<std::uint8_t>(c),
                        0, 3, 0}.pack();
    w[1] = stamp(ring);
    w[2] = storage;
    publish(ring, 3);
  }

  // An op's start: the thread's latest timestamp within a call (the previous op's end, or
  // the call's start), a fresh one outside any.
  std::uint64_t now_ns() override { return stamp(local()); }

  void mark(EventKind kind, const char* name, std::uint64_t step_number) {
    if (!running_) return;
    ThreadRing& ring = local();
    std::uint64_t* w = reserve(ring, 4);
    w[0] = RecordHeader{static_cast<std::uint8_t>(kind), 0, 0, 0, 4, 0}.pack();
    w[1] = ticks();
    w[2] = reinterpret_cast<std::uint64_t>(name), w[3] = step_number;
    publish(ring, 4);
  }

  // Scope names live as long as the recorder: the writer interns them later.
  const char* keep_name(std::string_view name) {
    std::lock_guard lock(names_mu_);
    return names_.emplace(name).first->c_str();
  }

  std::uint64_t next_step() { return ++steps_; }

  RecorderStats stats() {
    std::lock_guard lock(rings_mu_);
    RecorderStats s;
    s.thread_rings = rings_.size();
    s.ring_waits = retired_waits_;
    for (auto& r : rings_) s.ring_waits += r->waits();
    return s;
  }

 private:
  void record_allocator(std::uint8_t device, EventKind kind, const AllocatorEvent& a, const void* site, bool may_stack) {
    ThreadRing& ring = local();
    bool failure = kind == EventKind::AllocFailed || kind == EventKind::Oom;
    bool wants_stack = may_stack && stack_depth_ && (kind == EventKind::Alloc || failure);
    std::size_t n = failure ? 13 : 9;
    std::uint64_t* w = reserve(ring, n + (wants_stack ? static_cast<std::size_t>(stack_depth_) : 0));
    int depth = wants_stack ? frame_pointer_backtrace(w + n, stack_depth_) : 0;
    bool pooled = kind == EventKind::SegmentAlloc || kind == EventKind::SegmentFree || kind == EventKind::AllocRetry;
    // Segment and retry events carry the pool; an Alloc's category comes later, by Category events.
    w[0] = RecordHeader{static_cast<std::uint8_t>(kind), device, pooled && a.pool == Pool::Large, 0,
                        static_cast<std::uint16_t>(n + static_cast<std::size_t>(depth)),
                        static_cast<std::uint16_t>(depth)}.pack();
    w[1] = stamp(ring);
    w[2] = a.address, w[3] = static_cast<std::uint64_t>(a.size), w[4] = static_cast<std::uint64_t>(a.requested);
    w[5] = a.segment, w[6] = a.storage, w[7] = reinterpret_cast<std::uint64_t>(site);
    w[8] = static_cast<std::uint64_t>(static_cast<std::int64_t>(a.stream));
    if (failure) {
      w[9] = static_cast<std::uint64_t>(a.device_free), w[10] = static_cast<std::uint64_t>(a.reserved);
      w[11] = static_cast<std::uint64_t>(a.allocated), w[12] = static_cast<std::uint64_t>(a.largest_free_block);
    }
    publish(ring, n + static_cast<std::size_t>(depth));
  }

  // Reads one record back into an Event (times still in ticks) and what the writer
  // interns: the call site, the name, the native stack.
  struct Decoded {
    const void* site = nullptr;
    const char* name = nullptr;
    const std::uint64_t* frames = nullptr;
    int depth = 0;
  };
  static Decoded decode(const std::uint64_t* w, const RecordHeader& h, Event& e) {
    Decoded d;
    e.reset(static_cast<EventKind>(h.kind));
    e.device = h.device;
    e.time_ns = w[1];
    auto stream = [](std::uint64_t v) { return static_cast<std::int32_t>(static_cast<std::int64_t>(v)); };
    auto pool = [&] { return h.sub ? Pool::Large : Pool::Small; };
    d.site = reinterpret_cast<const void*>(w[7]);
    switch (e.kind) {
      case EventKind::SegmentAlloc: case EventKind::SegmentFree:
        e.segment = {.address = w[2], .size = w[3], .stream = stream(w[8]), .pool = pool()};
        d.site = nullptr;
        break;
      case EventKind::Alloc:
        e.alloc = {.address = w[2], .segment = w[5], .size = w[3], .requested = w[4], .storage = w[6], .stream = stream(w[8])};
        d.frames = w + 9, d.depth = h.extra;
        break;
      case EventKind::FreeRequested: case EventKind::FreeCompleted:
        e.free = {.address = w[2], .size = w[3], .storage = w[6], .stream = stream(w[8])};
        d.site = nullptr;
        break;
      case EventKind::AllocFailed: case EventKind::Oom:
        e.failure = {.size = w[3], .requested = w[4], .device_free = w[9], .reserved = w[10], .allocated = w[11],
                     .largest_free_block = w[12], .stream = stream(w[8])};
        d.frames = w + 13, d.depth = h.extra;
        break;
      case EventKind::AllocRetry:
        e.retry = {.size = w[3], .requested = w[4], .stream = stream(w[8]), .pool = pool()};
        break;
      case EventKind::View: {
        e.view.tensor = w[2], e.view.storage = w[3], e.view.offset = static_cast<std::int64_t>(w[4]);
        e.view.view = static_cast<ViewKind>(h.sub), e.view.dtype = static_cast<ScalarType>(h.flags);
        d.site = reinterpret_cast<const void*>(w[5]);
        e.view.sizes.ndim = e.view.strides.ndim = static_cast<std::uint8_t>(h.extra);
        for (std::size_t i = 0; i < h.extra; ++i) {
          e.view.sizes.dims[i] = static_cast<std::int64_t>(w[6 + i]);
          e.view.strides.dims[i] = static_cast<std::int64_t>(w[6 + h.extra + i]);
        }
        break;
      }
      case EventKind::Copy:
        e.copy = {.dst_address = w[2], .src_address = w[3], .bytes = w[4], .src_device = static_cast<std::uint8_t>(h.extra),
                  .reason = static_cast<CopyReason>(h.sub)};
        d.site = reinterpret_cast<const void*>(w[5]);
        break;
      case EventKind::Op: {
        e.op.duration_ns = w[1] - std::min(w[1], w[2]);  // in ticks until the writer converts it
        d.name = reinterpret_cast<const char*>(w[3]);
        e.op.bytes = w[4];
        d.site = reinterpret_cast<const void*>(w[5]);
        e.op.broadcast = h.flags != 0;
        e.op.n_inputs = static_cast<std::uint8_t>(h.extra);
        const std::uint64_t* p = get_dims(w + 6, e.op.output);
        for (std::size_t i = 0; i < e.op.n_inputs; ++i) p = get_dims(p, e.op.inputs[i]);
        break;
      }
      case EventKind::Category:
        e.category = {.storage = w[2], .category = static_cast<Category>(h.sub)};
        d.site = nullptr;
        break;
      case EventKind::ScopeBegin: case EventKind::ScopeEnd: case EventKind::Step:
        d.site = nullptr;
        d.name = reinterpret_cast<const char*>(w[2]);
        if (e.kind == EventKind::Step) e.step.number = w[3];
        break;
    }
    return d;
  }

  // This thread's ring, registered on first use. The writer frees it once the thread has
  // ended (a pthread key's destructor runs after every thread_local destructor, so no
  // event of the thread can follow) and its last events are in the trace. The main
  // thread's ring lives for the process: static destructors may still record.
  static inline thread_local ThreadRing* mine = nullptr;

  ThreadRing& local() {
    if (mine) [[likely]]
      return *mine;
    std::lock_guard lock(rings_mu_);
    rings_.push_back(std::make_unique<ThreadRing>(next_thread_++));
    mine = rings_.back().get();
    pthread_setspecific(retire_key_, mine);
    return *mine;
  }

  static void retire(void* ring) {
    static_cast<ThreadRing*>(ring)->retire();
    mine = nullptr;
  }

  std::uint64_t* reserve(ThreadRing& ring, std::size_t n) { return ring.reserve(n, [this] { wake_writer(); }); }
  void publish(ThreadRing& ring, std::size_t n) { ring.publish(n, [this] { wake_writer(); }); }

  void wake_writer() {
    if (wake_requested_.load(std::memory_order_relaxed) || wake_requested_.exchange(true, std::memory_order_acq_rel))
      return;
    wake_.notify_one();
  }

  // One clock reading per event group (instrument::current_event_group): rdtsc costs more
  // than the rest of an event (20 ns on a virtual machine), so the events of one runtime
  // call share the thread's latest timestamp, which every op refreshes at its end.
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

  void calibrate() {
    tick0_ = ticks();
    ns0_ = steady_ns();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::uint64_t t1 = ticks(), n1 = steady_ns();
    ns_per_tick_ = t1 > tick0_ ? static_cast<double>(n1 - ns0_) / static_cast<double>(t1 - tick0_) : 1.0;
  }

  std::uint64_t to_ns(std::uint64_t t) const {
    if (t < tick0_) return ns0_;
    return ns0_ + static_cast<std::uint64_t>(static_cast<double>(t - tick0_) * ns_per_tick_);
  }

  // Moves every published event of every thread into the trace, in order per thread, and
  // frees the rings of threads that have ended; returns how many events.
  std::size_t drain() {
    std::size_t moved = 0;
    std::vector<ThreadRing*> rings;
    {
      std::lock_guard lock(rings_mu_);
      for (auto& r : rings_) rings.push_back(r.get());
    }
    std::vector<ThreadRing*> ended;
    for (ThreadRing* ring : rings) {
      bool retired = ring->retired();  // before draining: nothing is published after it
      moved += ring->drain([&](const std::uint64_t* w, const RecordHeader& h) {
        Event e;
        Decoded d = decode(w, h, e);
        e.thread = ring->number();
        if (e.kind == EventKind::Op)
          e.op.duration_ns = static_cast<std::uint64_t>(static_cast<double>(e.op.duration_ns) * ns_per_tick_);
        e.time_ns = to_ns(e.time_ns);
        if (d.site) *e.site_field() = writer_->intern_site_address(reinterpret_cast<std::uint64_t>(d.site));
        if (d.depth > 0) {
          std::array<const void*, kMaxFrames> frames;
          for (int i = 0; i < d.depth; ++i) frames[static_cast<std::size_t>(i)] = reinterpret_cast<const void*>(d.frames[i]);
          *e.stack_field() = writer_->intern_stack(frames.data(), d.depth);
        }
        if (d.name) {
          auto [it, fresh] = name_ids_.emplace(d.name, 0);
          if (fresh) it->second = writer_->intern_string(d.name);
          *e.name_field() = it->second;
        }
        writer_->write(e);
      });
      if (retired) ended.push_back(ring);
    }
    if (!ended.empty()) {
      std::lock_guard lock(rings_mu_);
      std::erase_if(rings_, [&](const std::unique_ptr<ThreadRing>& r) {
        if (std::find(ended.begin(), ended.end(), r.get()) == ended.end()) return false;
        retired_waits_ += r->waits();
        return true;
      });
    }
    return moved;
  }

  void run() {
    auto last_flush = std::chrono::steady_clock::now();
    bool busy = false;  // the last drain found events: look again before sleeping
    while (true) {
      bool stopping;
      {
        std::unique_lock l(wake_mu_);
        if (!busy)
          wake_.wait_for(l, std::chrono::milliseconds(10), [this] {
            return stop_requested_ || flush_requested_ > flush_done_ || wake_requested_.load(std::memory_order_acquire);
          });
        wake_requested_.store(false, std::memory_order_relaxed);
        stopping = stop_requested_;
      }
      std::uint64_t flush_wanted;
      {
        std::lock_guard l(wake_mu_);
        flush_wanted = flush_requested_;
      }
      try {
        busy = drain() > 0;
        auto now = std::chrono::steady_clock::now();
        if (stopping || flush_wanted > flush_done_ || now - last_flush >= flush_interval_) {
          writer_->flush();
          last_flush = now;
        }
      } catch (const std::exception& e) {
        std::cerr << "memlens: recording stopped: " << e.what() << "\n";
        return;
      }
      {
        std::lock_guard l(wake_mu_);
        flush_done_ = flush_wanted;
      }
      flushed_cv_.notify_all();
      if (stopping) return;
    }
  }

  std::mutex control_;
  bool running_ = false;
  std::string path_;
  std::unique_ptr<TraceWriter> writer_;
  std::thread thread_;
  std::mutex wake_mu_;
  std::condition_variable wake_;
  bool stop_requested_ = false;
  std::atomic<bool> wake_requested_{false};
  std::uint64_t flush_requested_ = 0, flush_done_ = 0;
  std::condition_variable flushed_cv_;
  std::chrono::milliseconds flush_interval_{100};
  std::mutex rings_mu_;
  std::vector<std::unique_ptr<ThreadRing>> rings_;
  std::uint32_t next_thread_ = 0;
  std::uint64_t retired_waits_ = 0;
  pthread_key_t retire_key_ = [] {
    pthread_key_t k;
    pthread_key_create(&k, &Recorder::retire);
    return k;
  }();
  DeviceObserver observers_[2];
  std::vector<Allocator*> allocators_;
  std::mutex names_mu_;
  std::unordered_set<std::string> names_;
  std::unordered_map<const char*, std::uint32_t> name_ids_;  // names have static lifetime: keyed by address
  std::atomic<std::uint64_t> steps_{0};
  int stack_depth_ = 0;
  std::uint64_t tick0_ = 0, ns0_ = 0;
  double ns_per_tick_ = 1.0;
};

// Never destroyed: threads and static tensors may report after main() returns.
Recorder& recorder() {
  static Recorder* r = new Recorder();
  return *r;
}

bool autostarted = false;  // MEMLENS_TRACE started this recording

// MEMLENS_TRACE=path records the whole program.
struct Autostart {
  Autostart() {
    const char* path = std::getenv("MEMLENS_TRACE");
    if (!path || !*path) return;
    RecordOptions options;
    const char* stacks = std::getenv("MEMLENS_STACKS");
    options.stacks = stacks && std::string(stacks) == "1";
    if (const char* depth = std::getenv("MEMLENS_STACK_DEPTH")) options.stack_depth = std::atoi(depth);
    try {
      profiler::start(path, options);
      autostarted = true;
    } catch (const std::exception& e) {
      std::cerr << "memlens: cannot record: " << e.what() << "\n";
    }
  }
  ~Autostart() { profiler::stop(); }
} autostart;

// A training program's run ends when main returns. Static destruction comes after it, and
// statics made during main (a function-local cache of tensors) are destroyed before this
// file's own: were they recorded, memory held until teardown would look freed, and its
// leak missed. So a recording MEMLENS_TRACE started stops right as main returns.
using MainFunction = int (*)(int, char**, char**);
MainFunction user_main = nullptr;

// main is called as the C library calls it, with three arguments whatever its own
// declaration says: UBSan's function-type check would flag `int main(int, char**)`.
#if defined(__clang__)
__attribute__((no_sanitize("function")))
#endif
int main_then_stop(int argc, char** argv, char** envp) {
  int status = user_main(argc, argv, envp);
  if (autostarted) profiler::stop();
  return status;
}

}  // namespace

void start(const std::string& path, const RecordOptions& options) { recorder().start(path, options); }
void stop() { recorder().stop(); }
void flush() { recorder().flush(); }
bool recording() { return recorder().running(); }
RecorderStats recorder_stats() { return recorder().stats(); }

Scope::Scope(std::string_view name) : name_(recorder().keep_name(name)) {
  recorder().mark(EventKind::ScopeBegin, name_, 0);
}
Scope::~Scope() { recorder().mark(EventKind::ScopeEnd, name_, 0); }

void step() { recorder().mark(EventKind::Step, nullptr, recorder().next_step()); }

}  // namespace memlens::profiler

// The C runtime's entry to main, in the program the recorder is linked into: it calls the
// C library's own with main wrapped (glibc; _start binds to the executable's definition).
extern "C" int __libc_start_main(memlens::profiler::MainFunction main, int argc, char** argv, void (*init)(), void (*fini)(),
                                 void (*rtld_fini)(), void* stack_end) {
  using Real = int (*)(memlens::profiler::MainFunction, int, char**, void (*)(), void (*)(), void (*)(), void*);
  auto real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "__libc_start_main"));
  memlens::profiler::user_main = main;
  return real(memlens::profiler::main_then_stop, argc, argv, init, fini, rtld_fini, stack_end);
}

// Referenced by the link options of memlens::recorder so the autostart object is always linked.
extern "C" {
int memlens_recorder_autostart = 0;
}
