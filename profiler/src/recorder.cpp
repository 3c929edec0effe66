#include "memlens/profiler/recorder.hpp"

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

// One slot of a thread's ring: the event (times in raw ticks) plus what the writer thread
// interns: the call-site address and an op or scope name with static lifetime.
struct Slot {
  static constexpr int kMaxFrames = 32;
  Event event;
  const void* site = nullptr;
  const char* name = nullptr;
  int depth = 0;  // native stack frames captured (MEMLENS_STACKS)
  std::array<void*, kMaxFrames> frames;
};

// A single-producer, single-consumer ring owned by one recording thread.
struct ThreadBuffer {
  static constexpr std::size_t kCapacity = 4096;
  explicit ThreadBuffer(std::uint32_t n) : number(n), slots(kCapacity) {}
  std::uint32_t number;
  std::vector<Slot> slots;
  std::atomic<std::uint64_t> head{0};  // written by the owner
  std::atomic<std::uint64_t> tail{0};  // written by the writer thread

  // `wake` is called when the ring fills, so the writer drains it now, not at its next tick.
  template <class Wake>
  Slot& claim(Wake&& wake) {
    std::uint64_t h = head.load(std::memory_order_relaxed);
    if (h - tail.load(std::memory_order_acquire) >= kCapacity) {
      wake();
      // Full: wait for the writer rather than lose an event.
      while (h - tail.load(std::memory_order_acquire) >= kCapacity) std::this_thread::yield();
    }
    return slots[h % kCapacity];
  }
  void publish() { head.store(head.load(std::memory_order_relaxed) + 1, std::memory_order_release); }
};

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
int frame_pointer_backtrace(void** out, int max) {
  static thread_local StackBounds bounds = thread_stack_bounds();
  auto* fp = static_cast<std::uintptr_t*>(__builtin_frame_address(0));
  int n = 0;
  while (n < max) {
    auto at = reinterpret_cast<std::uintptr_t>(fp);
    if (at < bounds.lo || at + 2 * sizeof(void*) > bounds.hi || (at & (sizeof(void*) - 1))) break;
    void* ret = reinterpret_cast<void*>(fp[1]);
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

void copy_dims(ShapeRecord& r, const instrument::Dims& dims) {
  r.ndim = static_cast<std::uint8_t>(std::min<std::size_t>(dims.size(), ShapeRecord::kMaxDims));
  for (std::size_t i = 0; i < r.ndim; ++i) r.dims[i] = dims[i];
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
    stack_depth_ = options.stacks ? std::clamp(options.stack_depth, 1, Slot::kMaxFrames) : 0;

    calibrate();
    running_ = true;
    stop_requested_ = false;
    // Memory allocated before recording began is not a ghost: describe it first.
    for (auto [alloc, dev] : {std::pair{&cpu, std::uint8_t{0}}, {&sim, std::uint8_t{1}}}) {
      for (const auto& seg : alloc->snapshot()) {
        Slot& s = claim(local());
        s.event = Event{};
        s.event.kind = EventKind::SegmentAlloc;
        fill_common(s.event, local(), dev);
        s.event.address = seg.address, s.event.size = seg.size, s.event.stream = seg.stream;
        s.event.sub = seg.pool == Pool::Large;
        s.site = nullptr, s.name = nullptr, s.depth = 0;
        local().publish();
        for (const auto& b : seg.blocks) {
          if (b.state != BlockSnapshot::State::Allocated) continue;
          Slot& a = claim(local());
          a.event = Event{};
          a.event.kind = EventKind::Alloc;
          fill_common(a.event, local(), dev);
          a.event.address = b.address, a.event.address2 = seg.address, a.event.size = b.size;
          a.event.requested = b.requested, a.event.stream = seg.stream;
          a.site = nullptr, a.name = nullptr, a.depth = 0;
          local().publish();
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

  // ---- the hot paths

  void on_allocator(std::uint8_t device, const AllocatorEvent& a) {
    using K = AllocatorEvent::Kind;
    EventKind kind;
    switch (a.kind) {
      case K::SegmentAlloc: kind = EventKind::SegmentAlloc; break;
      case K::SegmentFree: kind = EventKind::SegmentFree; break;
      case K::Alloc: kind = EventKind::Alloc; break;
      case K::FreeRequested: kind = EventKind::FreeRequested; break;
      case K::FreeCompleted: kind = EventKind::FreeCompleted; break;
      case K::SegmentAllocFailed: kind = EventKind::AllocFailed; break;
      case K::Oom: kind = EventKind::Oom; break;
      default: return;  // retries are counted by the statistics, not traced
    }
    ThreadBuffer& buf = local();
    Slot& s = claim(buf);
    Event& e = s.event;
    e.kind = kind;
    e.time_ns = ticks();
    e.thread = buf.number;
    e.device = device;
    e.address = a.address;
    e.size = static_cast<std::uint64_t>(a.size);
    e.requested = static_cast<std::uint64_t>(a.requested);
    e.stream = a.stream;
    // Segment events carry the pool; an Alloc's `sub` is its category, told later by Category events.
    bool segment = kind == EventKind::SegmentAlloc || kind == EventKind::SegmentFree;
    e.sub = segment && a.pool == Pool::Large;
    e.storage = kind == EventKind::Alloc || kind == EventKind::FreeRequested ? instrument::storage_in_flight() : 0;
    e.address2 = a.segment;
    e.free_bytes = static_cast<std::uint64_t>(a.device_free);
    e.reserved = static_cast<std::uint64_t>(a.reserved);
    e.allocated = static_cast<std::uint64_t>(a.allocated);
    s.site = instrument::current_site();
    s.name = nullptr;
    bool wants_stack = kind == EventKind::Alloc || kind == EventKind::AllocFailed || kind == EventKind::Oom;
    s.depth = stack_depth_ && wants_stack ? frame_pointer_backtrace(s.frames.data(), stack_depth_) : 0;
    buf.publish();
  }

  void on_view(std::uint64_t tensor, std::uint64_t storage, const Device& d, instrument::ViewKind kind, ScalarType dtype,
               const instrument::Dims& sizes, const instrument::Dims& strides, std::int64_t offset) override {
    ThreadBuffer& buf = local();
    Slot& s = claim(buf);
    Event& e = s.event;
    e.kind = EventKind::View;
    fill_common(e, buf, device_index(d));
    e.tensor = tensor, e.storage = storage, e.sub = static_cast<std::uint8_t>(kind), e.offset = offset;
    e.dtype = static_cast<std::uint8_t>(dtype);
    copy_dims(e.shape, sizes);
    copy_dims(e.strides, strides);
    s.site = instrument::current_site();
    s.name = nullptr;
    s.depth = 0;
    buf.publish();
  }

  void on_copy(const Device& src, const void* src_addr, const Device& dst, const void* dst_addr, std::uint64_t bytes,
               instrument::CopyReason reason) override {
    ThreadBuffer& buf = local();
    Slot& s = claim(buf);
    Event& e = s.event;
    e.kind = EventKind::Copy;
    fill_common(e, buf, device_index(dst));
    e.device2 = device_index(src);
    e.address = reinterpret_cast<std::uint64_t>(dst_addr);
    e.address2 = reinterpret_cast<std::uint64_t>(src_addr);
    e.size = bytes;
    e.sub = static_cast<std::uint8_t>(reason);
    s.site = instrument::current_site();
    s.name = nullptr;
    s.depth = 0;
    buf.publish();
  }

  void on_op(const char* name, const instrument::Dims* const* inputs, int n_inputs, const instrument::Dims& output,
             std::uint64_t output_bytes, const Device& d, std::uint64_t start, bool broadcasting) override {
    ThreadBuffer& buf = local();
    Slot& s = claim(buf);
    Event& e = s.event;
    e.kind = EventKind::Op;
    fill_common(e, buf, device_index(d));
    e.duration_ns = e.time_ns - start;  // in ticks until the writer converts it
    e.n_inputs = static_cast<std::uint8_t>(std::min(n_inputs, 4));
    std::int64_t largest = 0;
    for (int i = 0; i < e.n_inputs; ++i) {
      copy_dims(e.inputs[static_cast<std::size_t>(i)], *inputs[i]);
      std::int64_t numel = 1;
      for (auto v : *inputs[i]) numel *= v;
      largest = std::max(largest, numel);
    }
    copy_dims(e.shape, output);
    std::int64_t out_numel = 1;
    for (auto v : output) out_numel *= v;
    e.broadcast = broadcasting && e.n_inputs > 0 && out_numel > largest;
    e.size = output_bytes;
    s.site = instrument::current_site();
    s.name = name;
    s.depth = 0;
    buf.publish();
  }

  void on_category(std::uint64_t storage, const Device& d, instrument::Category c) override {
    ThreadBuffer& buf = local();
    Slot& s = claim(buf);
    s.event.kind = EventKind::Category;
    fill_common(s.event, buf, device_index(d));
    s.event.storage = storage;
    s.event.sub = static_cast<std::uint8_t>(c);
    s.site = nullptr;
    s.name = nullptr;
    s.depth = 0;
    buf.publish();
  }

  std::uint64_t now_ns() override { return ticks(); }

  void mark(EventKind kind, const char* name, std::uint64_t step_number) {
    if (!running_) return;
    ThreadBuffer& buf = local();
    Slot& s = claim(buf);
    s.event.kind = kind;
    fill_common(s.event, buf, 0);
    s.event.step = step_number;
    s.site = nullptr;
    s.name = name;
    s.depth = 0;
    buf.publish();
  }

  // Scope names live as long as the recorder: the writer interns them later.
  const char* keep_name(std::string_view name) {
    std::lock_guard lock(names_mu_);
    return names_.emplace(name).first->c_str();
  }

  std::uint64_t next_step() { return ++steps_; }

 private:
  // This thread's ring, registered on first use. Rings outlive their threads (the
  // writer may still be draining them); they are kept for the process's lifetime.
  ThreadBuffer& local() {
    static thread_local ThreadBuffer* mine = nullptr;
    if (mine) [[likely]]
      return *mine;
    std::lock_guard lock(buffers_mu_);
    buffers_.push_back(std::make_unique<ThreadBuffer>(static_cast<std::uint32_t>(buffers_.size())));
    mine = buffers_.back().get();
    return *mine;
  }

  Slot& claim(ThreadBuffer& buf) {
    return buf.claim([this] {
      wake_requested_.store(true, std::memory_order_release);
      wake_.notify_one();
    });
  }

  void fill_common(Event& e, const ThreadBuffer& buf, std::uint8_t device) {
    e.time_ns = ticks();
    e.thread = buf.number;
    e.device = device;
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

  // Moves every published event of every thread into the trace, in time order per
  // thread; returns how many.
  std::size_t drain() {
    std::size_t moved = 0;
    std::vector<ThreadBuffer*> bufs;
    {
      std::lock_guard lock(buffers_mu_);
      for (auto& b : buffers_) bufs.push_back(b.get());
    }
    for (ThreadBuffer* b : bufs) {
      std::uint64_t head = b->head.load(std::memory_order_acquire);
      std::uint64_t i = b->tail.load(std::memory_order_relaxed);
      for (; i < head; ++i) {
        // The slot is the writer's until the tail passes it: convert in place, no copy.
        Slot& s = b->slots[i % ThreadBuffer::kCapacity];
        Event& e = s.event;
        if (e.kind == EventKind::Op)
          e.duration_ns = static_cast<std::uint64_t>(static_cast<double>(e.duration_ns) * ns_per_tick_);
        e.time_ns = to_ns(e.time_ns);
        e.site = s.site ? writer_->intern_site_address(reinterpret_cast<std::uint64_t>(s.site)) : 0;
        e.stack = s.depth > 0 ? writer_->intern_stack(s.frames.data(), s.depth) : 0;
        if (s.name) {
          auto [it, fresh] = name_ids_.emplace(s.name, 0);
          if (fresh) it->second = writer_->intern_string(s.name);
          e.name = it->second;
        }
        writer_->write(e);
        ++moved;
        if ((i & 63) == 63) b->tail.store(i + 1, std::memory_order_release);  // room for a waiting producer
      }
      b->tail.store(i, std::memory_order_release);
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
  std::mutex buffers_mu_;
  std::vector<std::unique_ptr<ThreadBuffer>> buffers_;
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
    } catch (const std::exception& e) {
      std::cerr << "memlens: cannot record: " << e.what() << "\n";
    }
  }
  ~Autostart() { profiler::stop(); }
} autostart;

}  // namespace

void start(const std::string& path, const RecordOptions& options) { recorder().start(path, options); }
void stop() { recorder().stop(); }
void flush() { recorder().flush(); }
bool recording() { return recorder().running(); }

Scope::Scope(std::string_view name) : name_(recorder().keep_name(name)) {
  recorder().mark(EventKind::ScopeBegin, name_, 0);
}
Scope::~Scope() { recorder().mark(EventKind::ScopeEnd, name_, 0); }

void step() { recorder().mark(EventKind::Step, nullptr, recorder().next_step()); }

}  // namespace memlens::profiler

// Referenced by the link options of memlens::recorder so the autostart object is always linked.
extern "C" {
int memlens_recorder_autostart = 0;
}
