#include "report_follow.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "exit_codes.hpp"
#include "memlens/analysis/report_layout.hpp"
#include "memlens/analysis/trace_follower.hpp"

namespace memlens::cli {

namespace {

using namespace memlens::analysis;
using Clock = std::chrono::steady_clock;

constexpr auto kLook = std::chrono::milliseconds(200);  // how often the file is looked at
constexpr auto kRedraw = std::chrono::seconds(1);       // how often a changed summary is drawn
constexpr std::size_t kNewestFindings = 5;
constexpr int kFollowerNice = 19;

std::string summary(const TraceFollower& f, const RenderOptions& render) {
  if (!f.report()) return "memlens: " + f.reason() + "\n";
  return "memlens: " + f.path() + "\n" +
         render_text({layout_live_summary(*f.report(), follow_state_name(f.state()), f.reason(), render, kNewestFindings)},
                     render);
}

}  // namespace

int follow_report(const std::string& path, const AnalysisOptions& options, const RenderOptions& render) {
  // A follower yields the CPU to the program it watches: on a machine the recording keeps
  // busy it falls behind (and catches up at the end) rather than slowing the program.
  (void)!setpriority(PRIO_PROCESS, 0, kFollowerNice);
  const bool terminal = isatty(STDOUT_FILENO);
  TraceFollower follower(path, options);
  bool changed = true;
  auto drawn = Clock::now() - kRedraw;
  while (true) {
    try {
      changed |= follower.poll();
    } catch (const std::exception& e) {
      throw UsageError(e.what());
    }
    const bool done = follower.state() == FollowState::Finished || follower.state() == FollowState::Stopped;
    if (changed && (done || Clock::now() - drawn >= kRedraw)) {
      // A terminal is redrawn in place; anything else gets each summary after the last.
      std::string text = summary(follower, render);
      std::fputs(terminal ? ("\x1b[H\x1b[J" + text).c_str() : (text + "\n").c_str(), stdout);
      std::fflush(stdout);
      changed = false;
      drawn = Clock::now();
    }
    if (done) return kOk;
    std::this_thread::sleep_for(kLook);
  }
}

}  // namespace memlens::cli
