#include "memlens/analysis/trace_follower.hpp"

#include <signal.h>

#include <cerrno>
#include <filesystem>

namespace memlens::analysis {

std::string_view follow_state_name(FollowState s) {
  switch (s) {
    case FollowState::Waiting:
      return "waiting";
    case FollowState::Recording:
      return "recording";
    case FollowState::Finished:
      return "finished";
    case FollowState::Stopped:
      return "stopped";
  }
  return "?";
}

TraceFollower::TraceFollower(std::string path, const AnalysisOptions& options, std::int64_t pid)
    : path_(std::move(path)), options_(options), pid_(pid), reason_("waiting for " + path_ + " to be created") {}

TraceFollower::~TraceFollower() = default;

namespace {

// Whether `pid` names a process here (one of another user's counts).
bool process_exists(std::int64_t pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM; }

}  // namespace

std::int64_t TraceFollower::recording_pid() const { return pid_ > 0 ? pid_ : reader_ ? reader_->header().pid : 0; }

bool TraceFollower::program_alive() const {
  const std::int64_t pid = recording_pid();
  return pid <= 0 || process_exists(pid);  // no pid to ask: it may still be recording
}

bool TraceFollower::open() {
  const std::string before = reason_;
  const FollowState state_before = state_;
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) {
    reason_ = "waiting for " + path_ + " to be created";
  } else {
    try {
      auto reader = std::make_unique<profiler::TraceReader>(path_);
      if (pid_ > 0 && reader->header().pid != pid_) {
        reason_ = "waiting for pid " + std::to_string(pid_) + " to write " + path_ + " (it holds pid " +
                  std::to_string(reader->header().pid) + "'s trace)";
      } else {
        reader_ = std::move(reader);
        pass_ = std::make_unique<AnalysisPass>(*reader_, options_);
        ++generation_;
        return true;
      }
    } catch (const profiler::TraceHeaderIncompleteError&) {
      reason_ = "waiting for " + path_ + "'s header";
    }
  }
  if (pid_ > 0 && !process_exists(pid_))
    state_ = FollowState::Stopped, reason_ = "pid " + std::to_string(pid_) + " ended before it wrote a trace to " + path_;
  return reason_ != before || state_ != state_before;
}

FollowState TraceFollower::settle() {
  if (reader_->has_footer()) return FollowState::Finished;
  if (!reader_->may_grow()) {
    reason_ = reader_->problem();
    return FollowState::Stopped;
  }
  if (program_alive()) return FollowState::Recording;
  // It is gone: what it flushed on its way out may have arrived since the last look.
  if (reader_->refresh() == profiler::TraceReader::Refresh::Grew) pass_->read_new_chunks();
  if (reader_->has_footer()) return FollowState::Finished;
  reason_ = reader_->header().program + " (pid " + std::to_string(recording_pid()) +
            ") ended without closing its trace (killed?): showing what it flushed";
  return FollowState::Stopped;
}

bool TraceFollower::poll(const Progress& progress) {
  bool changed = false;
  if (reader_ && reader_->refresh() == profiler::TraceReader::Refresh::Replaced) {
    // The report goes with its reader: a view over the old file must not outlive it.
    report_.reset(), pass_.reset(), reader_.reset();
    state_ = FollowState::Waiting;
    reason_ = path_ + " was replaced: waiting for the new trace";
    changed = true;
  }
  if (!reader_) {
    changed |= open();
    if (!reader_) return changed;
  }
  const bool read = pass_->read_new_chunks(progress) > 0;
  const FollowState next = settle();
  if (!read && next == state_ && report_) return changed;
  if (next == FollowState::Recording || next == FollowState::Finished) reason_.clear();
  state_ = next;
  report_ = std::make_unique<Report>(pass_->report(next == FollowState::Recording));
  report_->path = path_;
  if (next == FollowState::Recording) report_->problem.clear();  // no footer yet is no problem while it records
  return true;
}

}  // namespace memlens::analysis
