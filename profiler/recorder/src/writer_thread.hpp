#pragma once
// The recorder's background thread: drains every thread's ring, turns records into
// events (ticks into nanoseconds; sites, names and stacks interned) and hands them to the
// TraceWriter, flushing at least every `flush_interval`, so a program that dies leaves a
// trace readable up to its last flush.
//
// The order: each thread's records in its own order, merged so that each allocator's
// events are in the order its lock gave them (their sequence numbers), and each mark
// (step, scope) comes after the allocator events it saw happen and before the others. A
// record that must wait stays in its ring, with its thread's later ones, until what it
// waits for is written.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "memlens/trace/trace_writer.hpp"
#include "ring_registry.hpp"
#include "tick_clock.hpp"

namespace memlens::profiler {

class WriterThread {
 public:
  // The pause between drains while records keep coming (see run()).
  static constexpr std::chrono::milliseconds kBusyPause{1};

  explicit WriterThread(RingRegistry& rings) : rings_(rings) {}
  ~WriterThread() { stop(); }
  WriterThread(const WriterThread&) = delete;
  WriterThread& operator=(const WriterThread&) = delete;

  // `first`: per device, the sequence number of its allocator's next event.
  void start(std::unique_ptr<TraceWriter> writer, const TickClock& clock, std::chrono::milliseconds flush_interval,
             std::vector<std::uint64_t> first);
  // Drains what is published, writes the footer and closes the file. No-op when stopped.
  void stop();
  // Blocks until every record published before the call is in the file.
  void flush();
  // A producer's ring is filling: drain soon (cheap when a wake is already pending).
  void wake() {
    if (wake_requested_.load(std::memory_order_relaxed) || wake_requested_.exchange(true, std::memory_order_acq_rel)) return;
    wake_.notify_one();
  }

 private:
  void run();
  // Writes what is in order; `stopping`: then what still waits (for an event that never
  // came) too, in its thread's order.
  std::size_t drain(bool stopping);
  // Takes from each ring, up to its limit, what is in order (with `force`, everything);
  // returns how many, and sets `waited` when a record had to wait.
  std::size_t pass(const std::vector<ThreadRing*>& rings, const std::vector<std::uint64_t>& limits, bool force, bool& waited);
  bool in_order(const std::uint64_t* w, const RecordHeader& h) const;
  void write(const ThreadRing& ring, const std::uint64_t* w, const RecordHeader& h);

  RingRegistry& rings_;
  std::unique_ptr<TraceWriter> writer_;
  TickClock clock_;
  std::chrono::milliseconds flush_interval_{100};
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable wake_, flushed_;
  std::atomic<bool> wake_requested_{false};
  bool running_ = false, stop_requested_ = false;
  // A write failed (a full disk, /dev/full): said once, and from then on records are
  // drained and dropped, so the program runs on and no producer waits for a full ring.
  // Set and read by the writer thread, read by stop() after joining it.
  bool failed_ = false;
  std::uint64_t flush_requested_ = 0, flush_done_ = 0;
  std::unordered_map<const char*, std::uint32_t> name_ids_;  // names have static lifetime: keyed by address
  std::vector<std::uint64_t> next_;  // per device: the sequence number of the allocator event to write next
  // Per device, this pass: the fewest allocator events a mark not yet written saw (none
  // of its device's events from there on goes before it).
  std::vector<std::uint64_t> barrier_;
};

}  // namespace memlens::profiler
