// memlens report throughput: a synthetic trace of N events (a training loop's mix of
// allocations, frees, ops, views, copies and steps, written by the real TraceWriter),
// then the full analysis pass over it. Prints one JSON object: events per second of the
// pass (target: >= 30 M on one core) and, as its floor, of decoding alone (decompress and
// decode every event, visit none); peak RSS beside the trace's size; memory_at at a
// cursor in the first tenth (target <= 50 ms) and at the end.
//
//   bench_report [EVENTS] [TRACE] [--keep]   (default 10000000 events, /tmp/memlens-bench-report.memtrace;
//                                             --keep leaves the trace, e.g. for the viewer benchmark)
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memlens/analysis/analyze.hpp>
#include <memlens/analysis/memory_at.hpp>
#include <string>

#include "synthetic_trace.hpp"

using namespace memlens;
using namespace memlens::profiler;
using memlens::bench::write_trace;

namespace {

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t events = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10'000'000;
  std::string path = argc > 2 ? argv[2] : "/tmp/memlens-bench-report.memtrace";
  bool keep = argc > 3 && std::string(argv[3]) == "--keep";
  auto t0 = std::chrono::steady_clock::now();
  write_trace(path, events);
  auto t1 = std::chrono::steady_clock::now();
  long rss_before = peak_rss_kib();
  TraceReader reader(path);
  auto t_open = std::chrono::steady_clock::now();
  analysis::Report r = analysis::analyze(reader);
  auto t2 = std::chrono::steady_clock::now();
  double seconds = std::chrono::duration<double>(t2 - t1).count();
  // The floor under any pass: decompressing and decoding every event, visiting none.
  std::uint64_t decoded = 0;
  reader.for_each([&](const Event&) { ++decoded; });
  double decode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t2).count();
  auto file = std::filesystem::file_size(path);
  // The viewer's cursor: the state at a moment in the first tenth, and at the end.
  // One MemoryAtIndex, as the viewer keeps: the first visits replay from the start, later
  // ones from the checkpoints the visit to the end left behind.
  analysis::MemoryAtIndex index(reader);
  auto t3 = std::chrono::steady_clock::now();
  analysis::MemoryAt early = index.at(r.duration_ns / 10);
  auto t4 = std::chrono::steady_clock::now();
  analysis::MemoryAt late = index.at(r.duration_ns);
  auto t5 = std::chrono::steady_clock::now();
  analysis::MemoryAt early_again = index.at(r.duration_ns / 10 + r.duration_ns / 100);
  auto t6 = std::chrono::steady_clock::now();
  analysis::MemoryAt late_again = index.at(r.duration_ns - r.duration_ns / 100);
  auto t7 = std::chrono::steady_clock::now();
  std::printf(
      "{\"benchmark\": \"memlens_report\", \"events\": %llu, \"steps\": %llu, \"trace_bytes\": %llu, "
      "\"write_seconds\": %.3f, \"open_seconds\": %.3f, \"report_seconds\": %.3f, \"events_per_second\": %.0f, "
      "\"decode_only_events_per_second\": %.0f, "
      "\"memory_at_first_tenth_ms\": %.1f, \"memory_at_end_ms\": %.1f, "
      "\"memory_at_warm_first_tenth_ms\": %.1f, \"memory_at_warm_end_ms\": %.1f, \"memory_at_checkpoints\": %zu, "
      "\"peak_rss_bytes\": %lld, \"rss_before_report_bytes\": %lld, \"rss_over_file\": %.2f}\n",
      static_cast<unsigned long long>(r.events), static_cast<unsigned long long>(r.steps), static_cast<unsigned long long>(file),
      std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t_open - t1).count(), seconds,
      static_cast<double>(r.events) / seconds, static_cast<double>(decoded) / decode_seconds,
      std::chrono::duration<double, std::milli>(t4 - t3).count(), std::chrono::duration<double, std::milli>(t5 - t4).count(),
      std::chrono::duration<double, std::milli>(t6 - t5).count(), std::chrono::duration<double, std::milli>(t7 - t6).count(),
      index.checkpoints(), peak_rss_kib() * 1024LL, rss_before * 1024LL,
      static_cast<double>(peak_rss_kib()) * 1024 / static_cast<double>(file));
  if (!keep) std::filesystem::remove(path);
  // Both moments see the device (the segment is allocated first).
  return r.events >= events && !early.devices.empty() && !late.devices.empty() && !early_again.devices.empty() &&
                 !late_again.devices.empty()
             ? 0
             : 1;
}
