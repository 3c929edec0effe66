#pragma once
// `memlens record`: runs a program linked with the memlens runtime under its recorder,
// through the environment the recorder reads at start (MEMLENS_TRACE, MEMLENS_STACKS,
// MEMLENS_DEVICE), so the program needs no change. With CUPTI, any CUDA program: the
// driver loads the collector named by CUDA_INJECTION64_PATH, which writes to
// MEMLENS_CUPTI_TRACE.
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace memlens::cli {

struct RecordRequest {
  std::vector<std::string> command;  // program and its arguments
  std::string output;                // "" = memlens-PROGRAM.memtrace
  bool stacks = false;
  int stack_depth = 0;                                           // 0 = the recorder's default
  std::string device;                                            // "" = the program's default
  std::string cupti_library;                                     // set: record through CUPTI, injecting this library
  std::vector<std::pair<std::string, std::string>> environment;  // more variables for the program
  std::function<void(int pid)> started;                          // called once the program runs (record --view)
};

struct RecordOutcome {
  std::string trace;
  int exit_status = 0;   // the program's, or 128 + signal
  std::string how;       // "exit 0", "killed by signal 9"
  bool created = false;  // the trace was not there before (record made the file)
};

// The trace `r` writes: its output, else memlens-PROGRAM.memtrace.
std::string trace_path(const RecordRequest& r);

// Throws UsageError when the program cannot be started.
RecordOutcome record_program(const RecordRequest& r);

// Throws UsageError when writing `trace` would destroy the program `command` runs or a file
// it is handed (`-o train.py -- python3 train.py`). Checked on the command as the user gave
// it, before it is wrapped (a Python program's launch).
void refuse_trace_over_command(const std::string& trace, const std::vector<std::string>& command);

}  // namespace memlens::cli
