#pragma once
// The CUPTI collector's trace: events from CUPTI's buffer callbacks, flushes from its flush
// thread, the close at exit, each under one lock. CUPTI can deliver a buffer after the
// close (frees during static destruction, a flush forced at exit): those events are
// dropped and counted, never written to a closed file, and nothing is thrown into CUPTI.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "memlens/trace/trace_writer.hpp"

namespace memlens::cupti {

class CollectorTrace {
 public:
  explicit CollectorTrace(std::unique_ptr<profiler::TraceWriter> writer);

  // Writes the events, or counts them as dropped once closed. A write that fails (a full
  // disk) is reported once on stderr and ends the trace there.
  void write(const std::vector<profiler::Event>& events);
  void flush();
  // Idempotent; the trace is whole (footer and trailer) after it.
  void close();
  std::uint32_t intern_string(const std::string& s);

  std::uint64_t dropped() const;

 private:
  void fail(const std::exception& e);  // under mu_

  mutable std::mutex mu_;
  std::unique_ptr<profiler::TraceWriter> writer_;
  bool closed_ = false;
  std::uint64_t dropped_ = 0;
};

}  // namespace memlens::cupti
