#pragma once
// Memory across commits: each run's headline figures kept in an SQLite file, shown as a
// series per program, and a check that fails when a run rises above the recent ones.
// A trend that creeps up a little each week is invisible run by run and plain here.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "memlens/analysis/report.hpp"
#include "memlens/common/error.hpp"

struct sqlite3;

namespace memlens::analysis {

class HistoryError : public Error {
  using Error::Error;
};

// One run's headline: what `history add` stores.
struct HistoryRun {
  std::int64_t id = 0;  // order of adding
  std::string program, commit, device;
  std::int64_t added_unix = 0;  // seconds
  std::uint64_t peak_allocated = 0, peak_reserved = 0, leaked_bytes = 0;
  std::map<std::string, std::uint64_t> findings;                 // count per kind
  std::vector<std::pair<std::string, std::uint64_t>> top_sites;  // at the peak, largest first (at most 5)
};

// The run's headline figures on its main device (or `device`).
HistoryRun history_run(const Report& r, const std::string& commit, const std::string& device = "");

class RunHistory {
 public:
  // Opens (creating when absent) the history file; HistoryError names the file otherwise.
  explicit RunHistory(const std::string& path);
  ~RunHistory();
  RunHistory(const RunHistory&) = delete;
  RunHistory& operator=(const RunHistory&) = delete;

  void add(HistoryRun& run);  // sets run.id
  // Runs of one program (every program when ""), oldest first.
  std::vector<HistoryRun> runs(const std::string& program = "") const;

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

// Per program: its runs as a table, and the change between consecutive runs that moved
// peak allocated most.
std::string history_text(const std::vector<HistoryRun>& runs);
// The peak allocated of each program over its runs, as one SVG picture.
std::string history_svg(const std::vector<HistoryRun>& runs);

// A run against the last `last` runs of its program: fails when its peak allocated rises
// above their median by more than `tolerance`. passed is true when there is no history yet.
struct HistoryVerdict {
  bool passed = true;
  std::string message;
};
HistoryVerdict check_against_history(const HistoryRun& run, const std::vector<HistoryRun>& earlier, std::size_t last,
                                     double tolerance);

}  // namespace memlens::analysis
