// `memlens report --follow`: the real binary following a trace while a test writer, or a
// real program under `memlens record`, writes it; its output is a file (plain text).
#include <signal.h>

#include <regex>

#include "memlens_cli.hpp"
#include "trace_builder.hpp"

using namespace memlens::test;
using namespace std::chrono_literals;

namespace {

// The event counts of the summaries in `out`, in order.
std::vector<std::uint64_t> event_counts(const std::string& out) {
  std::vector<std::uint64_t> counts;
  std::regex count(R"(\): ([0-9,]+) events over)");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), count); it != std::sregex_iterator(); ++it) {
    std::string digits = (*it)[1];
    std::erase(digits, ',');
    counts.push_back(std::stoull(digits));
  }
  return counts;
}

// Whether `out` from `from` on has a line matching `pattern`.
bool has_line(const std::string& out, std::size_t from, const std::string& pattern) {
  return std::regex_search(out.begin() + static_cast<std::ptrdiff_t>(from), out.end(), std::regex(pattern));
}

constexpr std::uint64_t kSeg = 0x10000000, kKiB = 1024;

}  // namespace

TEST_CASE("report --follow: a growing trace from a test writer, summarised as it grows, then finished", "[cli][follow]") {
  const std::string path = "/tmp/memlens-test-" + std::to_string(::getpid()) + "-follow-cli.memtrace";
  std::remove(path.c_str());
  Background follower({MEMLENS_BIN, "report", "--follow", path}, temp("follow-cli.out"));
  REQUIRE(follower.wait_for_output("memlens: waiting for " + path + " to be created", 30s));

  // Each burst is one chunk (the default chunk holds 4096 events), so a look sees all of a
  // burst or none of it.
  TraceBuilder t("follow-cli", 4096, ::getpid());
  const auto site = t.site(10, "train.py"), temp_site = t.site(20, "train.py");
  t.segment(kSeg, 4 << 20);
  auto step = [&](int s) {
    t.alloc(kSeg + 0x100000 + static_cast<std::uint64_t>(s) * 4 * kKiB, 4 * kKiB, site);
    t.alloc(kSeg, 64 * kKiB, temp_site);
    t.free(kSeg, 64 * kKiB);
    t.step();
  };
  for (int s = 0; s < 5; ++s) step(s);
  t.writer().flush();
  REQUIRE(follower.wait_for_output("21 events over", 30s));
  std::this_thread::sleep_for(1200ms);  // a summary is drawn at most once a second
  for (int s = 5; s < 20; ++s) step(s);
  t.writer().flush();
  REQUIRE(follower.wait_for_output("81 events over", 30s));
  std::this_thread::sleep_for(1200ms);
  for (int s = 20; s < 25; ++s) step(s);
  t.writer().flush();
  REQUIRE(follower.wait_for_output("101 events over", 30s));
  t.writer().close();  // only the footer is new
  REQUIRE(follower.wait(30s) == 0);

  const std::string out = follower.output();
  INFO(out);
  CHECK(out.find("\x1b[") == std::string::npos);  // not a terminal: plain text, no redraws
  const std::vector<std::uint64_t> counts = event_counts(out);
  REQUIRE(counts.size() == 4);
  CHECK(counts == std::vector<std::uint64_t>{21, 81, 101, 101});
  // The first summary, recording: sim:0 holds 5 blocks of 4 KiB now, peaked with the temporary.
  const std::size_t recording = out.find("RECORDING\n");
  REQUIRE(recording != std::string::npos);
  CHECK(has_line(out, recording, R"(\n  sim:0 +20\.00 KiB +84\.00 KiB +0\.000 s +4\.00 MiB +4\.00 MiB\n)"));
  const std::size_t finished = out.find("FINISHED\n");
  REQUIRE(finished != std::string::npos);
  CHECK(finished > recording);
  CHECK(out.find("hand-built (pid " + std::to_string(::getpid()) + "): 101 events over 0.000 s, 25 steps", finished) !=
        std::string::npos);
  CHECK(has_line(out, finished, R"(\n  sim:0 +100\.00 KiB +164\.00 KiB +0\.000 s +4\.00 MiB +4\.00 MiB\n)"));
  // The newest findings: a site that grows every step, found while it records.
  CHECK(out.find("growth at train.py:10: live memory grows by 4.00 KiB per step", recording) != std::string::npos);
  CHECK(out.find("STOPPED") == std::string::npos);
}

TEST_CASE("report --follow: a recorded program killed with -9 leaves the summary of what it flushed, and why", "[cli][follow]") {
  const std::string path = temp("follow-killed.memtrace");
  std::remove(path.c_str());
  Background follower({MEMLENS_BIN, "report", "--follow", path}, temp("follow-killed.out"));
  Background recording({MEMLENS_BIN, "record", "-o", path, "--", LINEAR_REGRESSION_FIXED_BIN, "100000000"},
                       temp("follow-killed-record.out"));
  REQUIRE(follower.wait_for_output("RECORDING", 30s));
  // The recorded program is the trace header's process (memlens record runs it as a child).
  std::int64_t pid = memlens::profiler::TraceReader(path).header().pid;
  REQUIRE(pid > 0);
  REQUIRE(kill(static_cast<pid_t>(pid), SIGKILL) == 0);
  CHECK(recording.wait(30s) == 137);
  // The follower runs at nice 19: on a loaded machine it catches up slowly.
  const int follower_status = follower.wait(90s);
  INFO(follower.output());
  REQUIRE(follower_status == 0);

  // Long lines are wrapped at 100 columns: joined again here.
  const std::string out = std::regex_replace(follower.output(), std::regex("\n +(?=[^ ])"), " ");
  INFO(out);
  const std::size_t stopped = out.find("STOPPED ");
  REQUIRE(stopped != std::string::npos);
  CHECK(out.find("linear_regression_fixed (pid " + std::to_string(pid) +
                     ") ended without closing its trace (killed?): showing what it flushed",
                 stopped) != std::string::npos);
  CHECK(out.find("warning: the trace ends without a footer (the program stopped before closing it)", stopped) !=
        std::string::npos);
  // What the follower shows is every event of the file's whole chunks, read by a reader of its own.
  memlens::profiler::TraceReader whole(path);
  CHECK_FALSE(whole.has_footer());
  const std::vector<std::uint64_t> counts = event_counts(out.substr(stopped));
  REQUIRE(counts.size() == 1);
  CHECK(counts[0] == whole.totals().events);
  CHECK(counts[0] > 0);
  CHECK(recording.output().find("killed by signal 9") != std::string::npos);
}

TEST_CASE("report --follow: usage errors in one line", "[cli][follow]") {
  Run two = run("report --follow a.memtrace b.memtrace");
  CHECK(two.status == 2);
  CHECK(two.out == "memlens: report --follow: one trace at a time (got 2)\n");
  Run json = run("report --follow --format json a.memtrace");
  CHECK(json.status == 2);
  CHECK(json.out ==
        "memlens: report --follow: draws its own summary on the terminal; leave out -o, --format, --only and --stacks\n");
  const std::string junk = temp("follow-junk");
  std::ofstream(junk) << "PK\x03\x04 not a trace";
  Run bad = run("report --follow " + quote(junk));
  CHECK(bad.status == 2);
  CHECK(bad.out == "memlens: " + junk + ": not a memlens trace (bad magic)\n");
}
