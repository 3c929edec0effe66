#pragma once
// A trace followed while its program records it: each look reads the whole chunks
// appended since the last (TraceReader::refresh, AnalysisPass::read_new_chunks), so a
// long recording is read once, and gives a report of everything so far. One follower
// feeds both `memlens report --follow` and the viewer's --follow.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "memlens/analysis/analyze.hpp"
#include "memlens/trace/trace_reader.hpp"

namespace memlens::analysis {

enum class FollowState {
  Waiting,    // no trace to read yet (no file, a header still being written, another run's trace)
  Recording,  // read up to the newest whole chunk; the program goes on
  Finished,   // the footer arrived: the trace is whole
  Stopped,    // no footer, and none will come: the program is gone, or a chunk is corrupt
};
std::string_view follow_state_name(FollowState s);  // "waiting", "recording", "finished", "stopped"

class TraceFollower {
 public:
  // `pid`: the recording program's process when known (memlens record --view); a trace
  // at the path that another process wrote is then waited past. 0: whatever trace is there.
  explicit TraceFollower(std::string path, const AnalysisOptions& options = {}, std::int64_t pid = 0);
  ~TraceFollower();
  TraceFollower(const TraceFollower&) = delete;
  TraceFollower& operator=(const TraceFollower&) = delete;

  // One look at the file; true when report() or state() changed. Throws TraceError when the
  // path holds something that is not a trace (or a header that is corrupt).
  bool poll(const Progress& progress = {});

  FollowState state() const { return state_; }
  // Why it waits or stopped, one line; "" while recording or once finished.
  const std::string& reason() const { return reason_; }
  const std::string& path() const { return path_; }
  // Everything read so far; nullptr until a trace has been opened.
  const Report* report() const { return report_.get(); }
  // The reader behind report() (the allocator at a moment reads it); nullptr until then.
  const profiler::TraceReader* reader() const { return reader_.get(); }
  // Counts the files followed: it changes when the path comes to name a new file.
  std::uint64_t generation() const { return generation_; }

 private:
  bool open();
  FollowState settle();
  // The recording's process: the one given, else the header's (0: unknown).
  std::int64_t recording_pid() const;
  bool program_alive() const;

  std::string path_;
  AnalysisOptions options_;
  std::int64_t pid_;
  std::unique_ptr<profiler::TraceReader> reader_;
  std::unique_ptr<AnalysisPass> pass_;
  std::unique_ptr<Report> report_;
  FollowState state_ = FollowState::Waiting;
  std::string reason_;
  std::uint64_t generation_ = 0;
};

}  // namespace memlens::analysis
