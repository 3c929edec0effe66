// Following a recording: a thread writes the synthetic trace (synthetic_trace.hpp) as fast
// as it can, flushing every 100,000 events as a recorder flushes, while this thread follows
// it as `memlens report --follow` and the viewer do (a TraceFollower looked at every 100 ms,
// and the allocator at the newest moment after each look, as the viewer's cursor asks).
// Prints one JSON object: the events followed against those written, the looks' CPU time
// against one analysis of the finished file (each byte is read once: the ratio stays near
// 1), the slowest look, and the newest moment's cost per look and per event it replayed
// (the viewer's worker computes it after each look).
//
//   bench_follow [EVENTS] [TRACE]   (default 10000000 events, /tmp/memlens-bench-follow.memtrace)
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memlens/analysis/analyze.hpp>
#include <memlens/analysis/memory_at.hpp>
#include <memlens/analysis/trace_follower.hpp>
#include <string>
#include <thread>

#include "synthetic_trace.hpp"

using namespace memlens;

namespace {

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t events = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10'000'000;
  const std::string path = argc > 2 ? argv[2] : "/tmp/memlens-bench-follow.memtrace";
  std::filesystem::remove(path);

  analysis::TraceFollower follower(path);
  std::unique_ptr<analysis::MemoryAtIndex> index;
  std::uint64_t index_file = 0;
  const auto start = std::chrono::steady_clock::now();
  std::thread writer([&] { bench::write_trace(path, events, 100'000); });
  double follow_cpu = 0, slowest_look_ms = 0, newest_total_ms = 0, newest_slowest_ms = 0;
  int looks = 0, newest_visits = 0;
  std::uint64_t newest_events = 0, events_at_last_visit = 0;  // events the newest-moment visits replayed
  while (true) {
    const double cpu = thread_cpu_seconds();
    const auto look = std::chrono::steady_clock::now();
    const bool changed = follower.poll();
    slowest_look_ms = std::max(slowest_look_ms, ms_since(look));
    follow_cpu += thread_cpu_seconds() - cpu;
    ++looks;
    if (changed && follower.report() && follower.reader()) {
      if (!index || index_file != follower.generation())
        index = std::make_unique<analysis::MemoryAtIndex>(*follower.reader()), index_file = follower.generation();
      const auto at = std::chrono::steady_clock::now();
      index->at(follower.report()->duration_ns);
      const double ms = ms_since(at);
      newest_total_ms += ms, newest_slowest_ms = std::max(newest_slowest_ms, ms), ++newest_visits;
      newest_events += follower.report()->events - events_at_last_visit;
      events_at_last_visit = follower.report()->events;
    }
    if (follower.state() == analysis::FollowState::Finished) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  writer.join();
  const double wall = ms_since(start) / 1000;

  // The same file, read whole once: what following it should cost in all.
  const double cpu = thread_cpu_seconds();
  profiler::TraceReader whole(path);
  const analysis::Report once = analysis::analyze(whole);
  const double once_cpu = thread_cpu_seconds() - cpu;

  const analysis::Report& followed = *follower.report();
  std::printf(
      "{\"benchmark\": \"memlens_follow\", \"events_written\": %llu, \"events_followed\": %llu, \"trace_bytes\": %llu, "
      "\"wall_seconds\": %.3f, \"looks\": %d, \"follow_cpu_seconds\": %.3f, \"one_analysis_cpu_seconds\": %.3f, "
      "\"follow_over_one_analysis\": %.2f, \"slowest_look_ms\": %.1f, \"newest_moment_mean_ms\": %.2f, "
      "\"newest_moment_slowest_ms\": %.2f, \"newest_moment_ns_per_new_event\": %.1f}\n",
      static_cast<unsigned long long>(once.events), static_cast<unsigned long long>(followed.events),
      static_cast<unsigned long long>(std::filesystem::file_size(path)), wall, looks, follow_cpu, once_cpu, follow_cpu / once_cpu,
      slowest_look_ms, newest_visits ? newest_total_ms / newest_visits : 0.0, newest_slowest_ms,
      newest_events ? newest_total_ms * 1e6 / static_cast<double>(newest_events) : 0.0);
  std::filesystem::remove(path);
  return followed.events == once.events && followed.events >= events ? 0 : 1;
}
