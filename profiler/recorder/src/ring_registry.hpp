#pragma once
// Every recording thread's ring (thread_ring.hpp): registered on the thread's first event,
// retired when the thread ends, freed by the writer thread once its last events are in
// the trace. The main thread's ring lives for the process: static destructors may still
// record.
#include <pthread.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "thread_ring.hpp"

namespace memlens::profiler {

class RingRegistry {
 public:
  RingRegistry() { pthread_key_create(&retire_key_, &RingRegistry::retire); }
  RingRegistry(const RingRegistry&) = delete;
  RingRegistry& operator=(const RingRegistry&) = delete;

  // This thread's ring (the hot path: one thread_local load once registered).
  ThreadRing& local() {
    if (mine) [[likely]]
      return *mine;
    return add();
  }

  // ---- the consumer (one at a time: the writer thread, or start() while it is stopped)

  // The rings now, for one pass of the consumer.
  std::vector<ThreadRing*> rings() {
    std::lock_guard lock(mu_);
    std::vector<ThreadRing*> out;
    for (auto& r : rings_) out.push_back(r.get());
    return out;
  }

  // Frees these rings: of threads that ended (retired() was true before their last
  // drain), with every record taken.
  void free(const std::vector<ThreadRing*>& ended) {
    if (ended.empty()) return;
    std::lock_guard lock(mu_);
    std::erase_if(rings_, [&](const std::unique_ptr<ThreadRing>& r) {
      if (std::find(ended.begin(), ended.end(), r.get()) == ended.end()) return false;
      retired_waits_ += r->waits();
      return true;
    });
  }

  // Drops what the rings hold unread: records published after a recording stopped must
  // not open the next one; a failed recording drops its records too.
  std::size_t discard() {
    std::size_t moved = 0;
    std::vector<ThreadRing*> ended;
    for (ThreadRing* ring : rings()) {
      bool retired = ring->retired();  // before draining: nothing is published after it
      moved += ring->drain([](const std::uint64_t*, const RecordHeader&) { return true; });
      if (retired) ended.push_back(ring);
    }
    free(ended);
    return moved;
  }

  std::size_t count() {
    std::lock_guard lock(mu_);
    return rings_.size();
  }
  // Times a thread found its ring full and waited for the writer, ended threads included.
  std::uint64_t waits() {
    std::lock_guard lock(mu_);
    std::uint64_t n = retired_waits_;
    for (auto& r : rings_) n += r->waits();
    return n;
  }

 private:
  ThreadRing& add() {
    std::lock_guard lock(mu_);
    rings_.push_back(std::make_unique<ThreadRing>(next_thread_++));
    mine = rings_.back().get();
    pthread_setspecific(retire_key_, mine);
    return *mine;
  }
  // A pthread key's destructor runs after every thread_local destructor, so no event of
  // the thread can follow it.
  static void retire(void* ring) {
    static_cast<ThreadRing*>(ring)->retire();
    mine = nullptr;
  }

  static inline thread_local ThreadRing* mine = nullptr;
  std::mutex mu_;
  std::vector<std::unique_ptr<ThreadRing>> rings_;
  std::uint32_t next_thread_ = 0;  // thread numbers are never reused within a process
  std::uint64_t retired_waits_ = 0;
  pthread_key_t retire_key_;
};

}  // namespace memlens::profiler
