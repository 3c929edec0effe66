// A trace read while it is written: the reader's refresh, the resumable analysis pass and
// the follower, against the same file read whole once it is closed.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <memlens/analysis/analyze.hpp>
#include <memlens/analysis/memory_at.hpp>
#include <memlens/analysis/render.hpp>
#include <memlens/analysis/trace_follower.hpp>

#include "trace_builder.hpp"

using namespace memlens::analysis;
using memlens::test::TraceBuilder;
using Refresh = memlens::profiler::TraceReader::Refresh;

namespace {

constexpr std::uint64_t kSeg = 0x10000000, kKiB = 1024;

// One step of a training loop that keeps one more 4 KiB block each step (growth) and frees
// a 64 KiB temporary: `step` counts from 0.
void write_step(TraceBuilder& t, std::uint32_t site, std::uint32_t temp_site, int step) {
  t.alloc(kSeg + 0x100000 + static_cast<std::uint64_t>(step) * 4 * kKiB, 4 * kKiB, site);
  t.alloc(kSeg, 64 * kKiB, temp_site);
  t.free(kSeg, 64 * kKiB);
  t.step();
}

// A process id that no process has now: a child that has exited and been reaped.
std::int64_t gone_pid() {
  pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  return child;
}

}  // namespace

TEST_CASE("follow: a pass over a growing trace reads each event once and ends where a whole read does", "[follow]") {
  TraceBuilder t("follow-pass", 16);
  const auto site = t.site(10), temp_site = t.site(20);
  t.segment(kSeg, 4 << 20);
  for (int s = 0; s < 10; ++s) write_step(t, site, temp_site, s);
  t.writer().flush();

  memlens::profiler::TraceReader reader(t.path());
  REQUIRE(reader.may_grow());
  AnalysisPass pass(reader);
  std::uint64_t read = pass.read_new_chunks();
  CHECK(read == 41);  // the segment and 4 events a step
  CHECK(reader.refresh() == Refresh::Unchanged);
  CHECK(pass.read_new_chunks() == 0);
  Report early = pass.report(/*in_progress=*/true);
  CHECK(early.steps == 10);
  CHECK(early.ends_mid_run);  // what is alive while it records is its working set
  REQUIRE(early.device("sim:0"));
  CHECK(early.device("sim:0")->final_allocated == 10 * 4 * kKiB);
  CHECK(early.device("sim:0")->peak_allocated.allocated == 10 * 4 * kKiB + 64 * kKiB);

  for (int s = 10; s < 30; ++s) write_step(t, site, temp_site, s);
  t.writer().flush();
  CHECK(reader.refresh() == Refresh::Grew);
  read += pass.read_new_chunks();
  CHECK(read == 121);
  CHECK(pass.report(true).device("sim:0")->final_allocated == 30 * 4 * kKiB);

  t.free(kSeg + 0x100000, 4 * kKiB);
  t.writer().close();
  CHECK(reader.refresh() == Refresh::Grew);
  CHECK(reader.has_footer());
  CHECK_FALSE(reader.may_grow());
  read += pass.read_new_chunks();
  CHECK(read == 122);  // every event once: no chunk was read twice
  CHECK(reader.refresh() == Refresh::Unchanged);

  // The same file read whole, by a reader of its own.
  memlens::profiler::TraceReader whole(t.path());
  Report a = pass.report(), b = analyze(whole);
  CHECK(a.events == b.events);
  CHECK(a.steps == b.steps);
  CHECK(a.duration_ns == b.duration_ns);
  CHECK(a.problem == "");
  CHECK(a.device("sim:0")->peak_allocated.allocated == b.device("sim:0")->peak_allocated.allocated);
  CHECK(a.leaks.leaked_bytes == 29 * 4 * kKiB);
  CHECK(a.leaks.leaked_bytes == b.leaks.leaked_bytes);
  REQUIRE(a.leaks.growth.size() == 1);
  CHECK(a.leaks.growth[0].bytes_per_step == b.leaks.growth[0].bytes_per_step);
  REQUIRE(a.findings.size() == b.findings.size());
  for (std::size_t i = 0; i < a.findings.size(); ++i) CHECK(a.findings[i].message == b.findings[i].message);
  CHECK(a.timeline.step_times_ns == b.timeline.step_times_ns);
  // Reported twice mid-way, the pass still gives the whole read's report, every section of it.
  CHECK(render_json({a}, {}) == render_json({b}, {}));
  REQUIRE(a.timeline.series.size() == b.timeline.series.size());
  CHECK(a.timeline.series[0].buckets.size() == b.timeline.series[0].buckets.size());
  CHECK(a.timeline.series[0].top_sites == b.timeline.series[0].top_sites);
}

TEST_CASE("follow: the allocator at the newest moment of a growing trace keeps its checkpoints", "[follow]") {
  TraceBuilder t("follow-at", 8);
  const auto site = t.site(10), temp_site = t.site(20);
  t.segment(kSeg, 4 << 20);
  for (int s = 0; s < 40; ++s) write_step(t, site, temp_site, s);
  t.writer().flush();
  memlens::profiler::TraceReader reader(t.path());
  MemoryAtIndex index(reader, 32);
  CHECK(index.at(UINT64_MAX / 2).devices.at(0).allocated == 40 * 4 * kKiB);
  const std::size_t checkpoints = index.checkpoints();
  CHECK(checkpoints > 0);
  for (int s = 40; s < 80; ++s) write_step(t, site, temp_site, s);
  t.writer().flush();
  REQUIRE(reader.refresh() == Refresh::Grew);
  MemoryAt now = index.at(UINT64_MAX / 2);
  REQUIRE(now.devices.size() == 1);
  CHECK(now.devices[0].allocated == 80 * 4 * kKiB);
  CHECK(now.devices[0].allocated == memory_at(reader, UINT64_MAX / 2).devices.at(0).allocated);
  CHECK(index.checkpoints() > checkpoints);  // the new part left checkpoints too
  // A moment in the past, after visits to the end, still replays to its own state.
  const std::uint64_t middle = 101 * 1000;  // the 102nd event: 25 steps and a block
  CHECK(index.at(middle).devices.at(0).allocated == memory_at(reader, middle).devices.at(0).allocated);
  CHECK(index.at(middle).devices.at(0).allocated == 26 * 4 * kKiB);
  CHECK(index.at(UINT64_MAX / 2).devices.at(0).allocated == 80 * 4 * kKiB);
}

TEST_CASE("follow: waiting for a file, then recording, then finished", "[follow]") {
  const std::string path = "/tmp/memlens-test-" + std::to_string(::getpid()) + "-follow-states.memtrace";
  std::remove(path.c_str());
  TraceFollower follower(path);
  CHECK_FALSE(follower.poll());
  CHECK(follower.state() == FollowState::Waiting);
  CHECK(follower.reason() == "waiting for " + path + " to be created");
  CHECK(follower.report() == nullptr);
  // A header still being written.
  std::ofstream(path, std::ios::binary) << std::string("MEMTRACE\x07\0\0\0", 12);
  CHECK(follower.poll());
  CHECK(follower.reason() == "waiting for " + path + "'s header");
  CHECK(follower.state() == FollowState::Waiting);
  std::remove(path.c_str());

  TraceBuilder t("follow-states", 16, ::getpid());
  TraceFollower live(t.path());
  const auto site = t.site(10), temp_site = t.site(20);
  t.segment(kSeg, 4 << 20);
  for (int s = 0; s < 5; ++s) write_step(t, site, temp_site, s);
  t.writer().flush();
  CHECK(live.poll());
  CHECK(live.state() == FollowState::Recording);  // this process wrote it and still runs
  CHECK(live.reason() == "");
  REQUIRE(live.report());
  CHECK(live.report()->events == 21);
  CHECK(live.report()->problem == "");           // no footer yet is no problem while it records
  REQUIRE(live.report()->findings.size() == 1);  // the 64 KiB temporary made afresh every step
  CHECK(live.report()->findings[0].kind == FindingKind::Churn);
  CHECK_FALSE(live.poll());  // nothing new
  for (int s = 5; s < 12; ++s) write_step(t, site, temp_site, s);
  t.writer().close();
  CHECK(live.poll());
  CHECK(live.state() == FollowState::Finished);
  CHECK(live.report()->events == 49);
  CHECK(live.report()->leaks.growth.size() == 1);
  CHECK(live.generation() == 1);
}

TEST_CASE("follow: a program gone without a footer is stopped, with what it flushed", "[follow]") {
  const std::int64_t pid = gone_pid();
  TraceBuilder t("follow-killed", 16, pid);
  const auto site = t.site(10), temp_site = t.site(20);
  t.segment(kSeg, 4 << 20);
  for (int s = 0; s < 8; ++s) write_step(t, site, temp_site, s);
  t.writer().flush();
  TraceFollower follower(t.path());
  CHECK(follower.poll());
  CHECK(follower.state() == FollowState::Stopped);
  CHECK(follower.reason() ==
        "hand-built (pid " + std::to_string(pid) + ") ended without closing its trace (killed?): showing what it flushed");
  REQUIRE(follower.report());
  CHECK(follower.report()->events == 33);
  CHECK(follower.report()->problem ==
        "the trace ends without a footer (the program stopped before closing it): recovered 33 events from 3 whole event "
        "chunks");

  // Told which process to follow, a trace of another waits; that process gone, it stops.
  TraceFollower other(t.path(), {}, ::getpid());
  CHECK(other.poll());
  CHECK(other.state() == FollowState::Waiting);
  CHECK(other.reason() == "waiting for pid " + std::to_string(::getpid()) + " to write " + t.path() + " (it holds pid " +
                              std::to_string(pid) + "'s trace)");
  TraceFollower never(t.path() + ".none", {}, gone_pid());
  CHECK(never.poll());
  CHECK(never.state() == FollowState::Stopped);
  CHECK(never.reason().ends_with(" ended before it wrote a trace to " + t.path() + ".none"));
}

TEST_CASE("follow: a replaced or shortened file is followed anew; one that is not a trace is an error", "[follow]") {
  TraceBuilder first("follow-replaced", 16, ::getpid());
  const auto site = first.site(10), temp_site = first.site(20);
  first.segment(kSeg, 4 << 20);
  for (int s = 0; s < 6; ++s) write_step(first, site, temp_site, s);
  first.writer().close();
  TraceFollower follower(first.path());
  CHECK(follower.poll());
  CHECK(follower.state() == FollowState::Finished);
  CHECK(follower.report()->events == 25);
  CHECK(follower.generation() == 1);

  {
    // A new recording to the same path: the writer replaces the file, never cuts it under a reader.
    memlens::profiler::TraceReader old(first.path());
    memlens::profiler::TraceWriter again(first.path(), old.header(), 16);
    CHECK(old.totals().events == 25);  // the old mapping still reads the old file
    CHECK(follower.poll());
    CHECK(follower.state() == FollowState::Recording);
    CHECK(follower.generation() == 2);
    CHECK(follower.report()->events == 0);
    again.close();
  }
  CHECK(follower.poll());
  CHECK(follower.state() == FollowState::Finished);

  // Cut shorter in place (another tool truncating it): followed anew.
  const std::string bytes = [&] {
    std::ifstream in(first.path(), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  std::ofstream(first.path(), std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 20);
  CHECK(follower.poll());
  CHECK(follower.generation() == 3);
  CHECK(follower.state() == FollowState::Recording);

  std::ofstream(first.path(), std::ios::binary | std::ios::trunc) << "PK\x03\x04 not a trace at all";
  CHECK_THROWS_WITH(follower.poll(), first.path() + ": not a memlens trace (bad magic)");
}
