#pragma once
// A trace opened in the viewer. It is read and analysed on a worker thread, so the
// window draws from its first frame and shows progress; the report appears when the
// analysis is done. A file that cannot be read leaves a message, never a crash.
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "memlens/analysis/analyze.hpp"
#include "memlens/analysis/memory_at.hpp"

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
  // Blocks until the current load has finished.
  void wait();

  State state() const { return state_.load(std::memory_order_acquire); }
  // Counts the traces read so far: views that cache what they drew compare it.
  std::uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  double progress() const { return progress_.load(std::memory_order_relaxed); }
  const std::string& path() const { return state() == State::Loading ? pending_path_ : path_; }
  // Why the last open failed, once ("" otherwise). A failed open keeps the trace shown before.
  std::string take_error();
  // Ready only.
  const analysis::Report& report() const { return *report_; }
  const profiler::TraceReader& reader() const { return *reader_; }
  // The allocator state at `time_ns` (Ready only), recomputed when the time changes from
  // the nearest checkpoint the session's MemoryAtIndex keeps.
  const analysis::MemoryAt& memory_at(std::uint64_t time_ns);

 private:
  void load(std::string path);

  std::thread worker_;
  std::atomic<State> state_{State::Empty};
  std::atomic<double> progress_{0};
  std::atomic<std::uint64_t> generation_{0};
  std::string path_, pending_path_, error_;  // shown, being opened, why it failed
  std::unique_ptr<profiler::TraceReader> reader_;
  std::unique_ptr<analysis::Report> report_;
  std::unique_ptr<analysis::MemoryAtIndex> index_;  // over reader_
  std::optional<analysis::MemoryAt> at_;
};

}  // namespace memlens::viewer
