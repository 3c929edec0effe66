#pragma once
// Recording: every memory-relevant thing the runtime does becomes an event in a trace.
// Start from code (start/stop) or from the environment: MEMLENS_TRACE=path records the
// whole program (the `memlens record` command sets it), MEMLENS_STACKS=1 adds native stacks.
//
// Threads write into their own buffers (no lock, no allocation on the hot path); one
// background thread encodes them into the trace and flushes at least every 100 ms, so a
// program that dies leaves a trace readable up to its last flush.
#include <cstdint>
#include <string>
#include <string_view>

namespace memlens::profiler {

struct RecordOptions {
  std::size_t events_per_chunk = 4096;
  int flush_interval_ms = 100;
  // Native stacks on allocation and OOM events (MEMLENS_STACKS=1), at most this deep
  // (MEMLENS_STACK_DEPTH, default 32), walked through frame pointers: code built without
  // them (-fomit-frame-pointer) ends a stack early.
  bool stacks = false;
  int stack_depth = 32;
};

// Throws TraceError if the file cannot be created or a recording is already running.
void start(const std::string& path, const RecordOptions& options = {});
// Drains every thread's events, writes the footer and closes the file. No-op when idle.
void stop();
bool recording();
// What the recorder holds now, for tests and diagnostics.
struct RecorderStats {
  std::size_t thread_rings = 0;  // one per recording thread still alive or not yet drained
  std::uint64_t ring_waits = 0;  // times a thread found its ring full and waited for the writer
};
RecorderStats recorder_stats();

// Blocks until every event recorded so far is in the file (and handed to the OS).
void flush();

// A named region (shown as a band in the viewer): `memlens::profiler::Scope s("forward");`
class Scope {
 public:
  explicit Scope(std::string_view name);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  const char* name_;
};

// Marks an iteration boundary (step numbers count from 1).
void step();

}  // namespace memlens::profiler
