// libmemlens_cupti.so: loaded into an unmodified CUDA program by the driver through
// CUDA_INJECTION64_PATH (`memlens record --cupti` sets it), it records CUPTI's memory
// activity into a .memtrace at MEMLENS_CUPTI_TRACE (else MEMLENS_TRACE). Buffers are flushed every 100 ms and at
// exit, so a program that dies leaves a trace readable to its last flush.
#include <cupti.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

#include "activity_translation.hpp"
#include "collector_trace.hpp"
#include "memlens/trace/process_header.hpp"
#include "memlens/trace/trace_writer.hpp"

namespace memlens::cupti {

namespace {

constexpr std::size_t kBufferSize = 8 << 20;

class Collector {
 public:
  void start(const std::string& path) {
    trace_ = std::make_unique<CollectorTrace>(std::make_unique<profiler::TraceWriter>(
        path,
        profiler::process_trace_header("cupti_timestamp_ns", trace_devices(),
                                       "recorded by CUPTI (libmemlens_cupti.so): segments, pool blocks, copies and memsets")));
    names_.memset = trace_->intern_string("memset");
    check(cuptiActivityRegisterCallbacks(&Collector::buffer_requested, &Collector::buffer_completed),
          "cuptiActivityRegisterCallbacks");
    for (auto kind :
         {CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_MEMORY_POOL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET})
      check(cuptiActivityEnable(kind), "cuptiActivityEnable");
    flusher_ = std::thread([this] { flush_loop(); });
    std::atexit([] { collector().stop(); });
  }

  void stop() {
    {
      std::lock_guard l(stop_mu_);
      if (stopped_) return;
      stopped_ = true;
    }
    stop_cv_.notify_all();
    if (flusher_.joinable()) flusher_.join();
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    trace_->close();
  }

  static Collector& collector() {
    static Collector* c = new Collector();  // never destroyed: CUPTI may call back during exit
    return *c;
  }

 private:
  static void check(CUptiResult r, const char* call) {
    if (r == CUPTI_SUCCESS) return;
    const char* what = nullptr;
    cuptiGetResultString(r, &what);
    std::fprintf(stderr, "memlens-cupti: %s: %s\n", call, what ? what : "unknown error");
  }

  static void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferSize));
    *size = kBufferSize;
    *max_records = 0;
  }

  static void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
    try {  // nothing may be thrown into CUPTI
      collector().take(buffer, valid);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "memlens-cupti: a buffer of activity lost: %s\n", e.what());
    }
    std::free(buffer);
  }

  void take(uint8_t* buffer, size_t valid) {
    std::vector<profiler::Event> events;
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) translate(record, names_, events);
    std::stable_sort(events.begin(), events.end(), [](const auto& a, const auto& b) { return a.time_ns < b.time_ns; });
    trace_->write(events);
  }

  void flush_loop() {
    std::unique_lock l(stop_mu_);
    while (!stop_cv_.wait_for(l, std::chrono::milliseconds(100), [this] { return stopped_; })) {
      l.unlock();
      cuptiActivityFlushAll(0);
      trace_->flush();
      l.lock();
    }
  }

  std::unique_ptr<CollectorTrace> trace_;
  TranslatedNames names_;
  std::thread flusher_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopped_ = false;
};

}  // namespace

}  // namespace memlens::cupti

// The driver calls this once, when the program first initialises CUDA.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  // Beside the runtime's own recorder (MEMLENS_TRACE) the collector needs a file of its own.
  const char* path = std::getenv("MEMLENS_CUPTI_TRACE");
  if (!path || !*path) path = std::getenv("MEMLENS_TRACE");
  std::string out = path && *path ? path : "memlens-cupti-" + std::to_string(getpid()) + ".memtrace";
  try {
    memlens::cupti::Collector::collector().start(out);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memlens-cupti: not recording: %s\n", e.what());
    return 0;
  }
  return 1;
}
