#pragma once
// A trace opened in the viewer. It is read and analysed on a worker thread, so the
// window draws from its first frame and shows progress; the report appears when the
// analysis is done. A file that cannot be read leaves a message, never a crash.
//
// A trace followed while it is recorded (follow()) is looked at by the worker every
// 200 ms through one TraceFollower: each look reads only what was appended and publishes
// a new report, which the window takes at the start of a frame (take_update()); while the
// window's cursor stays at the newest moment, the worker also publishes the allocator
// there, so a frame never replays what arrived. The follower's reader is shared with the
// allocator view of other moments under one lock, which the window only tries: while the
// worker holds it, the window draws what it had.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "memlens/analysis/analyze.hpp"
#include "memlens/analysis/memory_at.hpp"
#include "memlens/analysis/trace_follower.hpp"

namespace memlens::viewer {

class TraceSession {
 public:
  enum class State { Empty, Loading, Ready, Failed };

  TraceSession() = default;
  ~TraceSession();
  TraceSession(const TraceSession&) = delete;
  TraceSession& operator=(const TraceSession&) = delete;

  // Starts reading `path` (after the previous load, if any, has finished).
  void open(const std::string& path);
  // Follows `path` while it is recorded, until the session goes or opens another; `pid`:
  // the recording program's process when known (memlens record --view).
  void follow(const std::string& path, std::int64_t pid = 0);
  // Blocks until the current load has finished (a follow: stops it).
  void wait();
  // Once a frame, on the window's thread: shows the newest report a follow published.
  // True when it changed.
  bool take_update();

  State state() const { return state_.load(std::memory_order_acquire); }
  // Counts the reports shown so far: views that cache what they drew compare it.
  std::uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  double progress() const { return progress_.load(std::memory_order_relaxed); }
  const std::string& path() const { return state() == State::Loading ? pending_path_ : path_; }
  // Why the last open failed, once ("" otherwise). A failed open keeps the trace shown before.
  std::string take_error();
  // Ready only.
  const analysis::Report& report() const { return *report_; }
  // The allocator state at `time_ns` (Ready only), recomputed when the time changes from
  // the nearest checkpoint the session's MemoryAtIndex keeps.
  const analysis::MemoryAt& memory_at(std::uint64_t time_ns);

  // Whether the window shows the allocator at the newest moment (the worker then publishes it).
  void want_newest_memory(bool want) { want_newest_.store(want, std::memory_order_relaxed); }
  // Called on the follow's worker after it publishes a report (the window wakes to take it).
  void on_publish(std::function<void()> wake) { wake_ = std::move(wake); }

  bool following() const { return following_; }
  // As of the report shown (following only): waiting, recording, finished or stopped, and why.
  analysis::FollowState follow_state() const { return shown_.state; }
  const std::string& follow_reason() const { return shown_.reason; }

 private:
  void load(std::string path);
  void watch();  // the follow's worker: a look every 200 ms until stopped
  // The allocator at the newest moment, on the worker (follower_mutex_ held).
  std::shared_ptr<const analysis::MemoryAt> newest_memory(std::uint64_t time_ns);

  // What a follow's worker hands the window.
  struct Published {
    std::shared_ptr<const analysis::Report> report;
    std::shared_ptr<const analysis::MemoryAt> newest;  // the allocator at report->duration_ns, when wanted
    analysis::FollowState state = analysis::FollowState::Waiting;
    std::string reason;
    std::uint64_t serial = 0;  // counts publications
  };

  std::thread worker_;
  std::atomic<State> state_{State::Empty};
  std::atomic<double> progress_{0};
  std::atomic<std::uint64_t> generation_{0};
  std::string path_, pending_path_, error_;  // shown, being opened, why it failed
  std::unique_ptr<profiler::TraceReader> reader_;
  std::shared_ptr<const analysis::Report> report_;
  std::unique_ptr<analysis::MemoryAtIndex> index_;  // over reader_, or the follower's reader
  std::optional<analysis::MemoryAt> at_;

  // Following.
  bool following_ = false;
  std::unique_ptr<analysis::TraceFollower> follower_;      // the worker's; its reader under follower_mutex_
  std::unique_ptr<analysis::MemoryAtIndex> newest_index_;  // the worker's, for the newest moment
  std::uint64_t newest_file_ = 0;                          // the follower's file newest_index_ reads
  std::atomic<bool> want_newest_{true};
  std::mutex follower_mutex_;
  std::uint64_t index_file_ = 0;  // the follower's file index_ reads (its generation)
  std::mutex published_mutex_;
  std::condition_variable stop_wake_;
  bool stop_ = false;  // under published_mutex_
  std::function<void()> wake_;
  Published published_, shown_;
};

}  // namespace memlens::viewer
