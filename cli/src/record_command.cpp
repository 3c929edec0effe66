// memlens record: a program under the recorder (record.hpp), then a few lines on what the
// trace holds.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include "command.hpp"
#include "exit_codes.hpp"
#include "flag_values.hpp"
#include "installed_file.hpp"
#include "memlens/analysis/report.hpp"
#include "python_program.hpp"
#include "record.hpp"
#include "trace_input.hpp"
#include "viewer_program.hpp"

namespace memlens::cli {

namespace {

using namespace memlens::analysis;

std::string cupti_library() {
  std::string found = installed_file(MEMLENS_CUPTI_BUILD_PATH, MEMLENS_CUPTI_INSTALL_PATH);
  if (found.empty())
    throw UsageError("record: --cupti needs libmemlens_cupti.so, which this build does not have (no CUDA toolkit with CUPTI)");
  return found;
}

// The traces the ranks of a torch.distributed program wrote beside `trace` during this
// recording (run.memtrace: run.rank0.memtrace, run.rank1.memtrace, ...).
void print_rank_traces(const std::string& trace, std::filesystem::file_time_type started) {
  std::filesystem::path base(trace);
  const std::string extension = base.has_extension() ? base.extension().string() : ".memtrace";
  std::string list;
  int ranks = 0;
  for (;; ++ranks) {
    std::filesystem::path rank = base;
    rank.replace_extension(".rank" + std::to_string(ranks) + extension);
    std::error_code ec;
    auto written = std::filesystem::last_write_time(rank, ec);
    if (ec || written < started) break;
    list += (list.empty() ? "" : ", ") + rank.string();
  }
  if (ranks == 0) return;
  std::filesystem::path pattern = base;
  pattern.replace_extension(".rank*" + extension);
  std::printf("memlens: %d ranks recorded: %s; see `memlens report %s`\n", ranks, list.c_str(), pattern.c_str());
}

class RecordCommand final : public Command {
 public:
  RecordCommand(CLI::App& parent, std::string argv0)
      : Command(parent.add_subcommand("record",
                                      "run a program under the recorder: one linked with the memlens runtime, "
                                      "a PyTorch script (python3 ...), or any CUDA program (--cupti)")),
        argv0_(std::move(argv0)) {
    app_->add_option("-o,--output", request_.output, "trace to write (default memlens-PROGRAM.memtrace)");
    app_->add_flag("--stacks", request_.stacks, "record native stacks on allocations (MEMLENS_STACKS=1)");
    app_->add_option("--stack-depth", stack_depth_, "deepest stack recorded, 1 to 32 (default 32)");
    app_->add_option("--device", request_.device, "what serves the program's cuda(): sim, cuda or cpu")
        ->check(CLI::IsMember({"sim", "cuda", "cpu", "auto"}));
    app_->add_flag("--cupti", cupti_, "record any CUDA program through CUPTI (segments, pool blocks, copies, memsets)");
    app_->add_flag("--view", view_,
                   "watch it in memlens-viewer while it runs: the viewer follows the trace as it is written "
                   "(memlens returns once both the program and the viewer have ended)");
    app_->add_option("command", request_.command, "PROGRAM ARGS... (after --)")->required();
    app_->positionals_at_end();
    app_->footer(
        "Examples: memlens record -o lr.memtrace -- build/samples/linear_regression 100\n"
        "          memlens record -o train.memtrace -- python3 train.py --epochs 2\n"
        "          memlens record --view -o train.memtrace -- python3 train.py   (watch it live)\n"
        "Exits with the program's exit status (128+N when killed by signal N).");
  }

  int run() override {
    if (app_->count("--stack-depth")) request_.stack_depth = static_cast<int>(count_flag("--stack-depth", stack_depth_, 1, 32));
    if (cupti_) request_.cupti_library = cupti_library();
    std::vector<std::string> shown = request_.command;
    if (!request_.output.empty()) refuse_trace_over_command(request_.output, request_.command);
    const std::vector<std::string> python_command = cupti_ ? std::vector<std::string>{} : as_python_command(request_.command);
    const bool python = !python_command.empty();
    if (python) {
      if (request_.output.empty()) request_.output = "memlens-" + python_program_name(python_command) + ".memtrace";
      PythonLaunch launch = python_launch(python_command, request_.output);
      request_.command = launch.command;
      request_.environment = launch.environment;
    }
    const auto started = std::filesystem::file_time_type::clock::now();
    if (view_) request_.started = [this](int pid) { viewer_ = start_viewer(trace_path(request_), pid); };
    RecordOutcome out = record_program(request_);
    std::error_code ec;
    auto size = std::filesystem::file_size(out.trace, ec);
    if (ec || size == 0) {
      // The empty file record made to check it could write (never a device such as /dev/full).
      if (!ec && out.created && std::filesystem::is_regular_file(out.trace, ec)) std::filesystem::remove(out.trace, ec);
      throw UsageError(shown[0] + " (" + out.how + ") wrote no trace to " + out.trace +
                       (python ? ": did it import torch? (memlens' Python recorder needs PyTorch)"
                               : ": is it linked with memlens::recorder?"));
    }
    LoadedTrace t = load_trace(out.trace);
    const Report& r = t.report;
    std::printf("memlens: recorded %s (%s) to %s: %llu events, %s\n", shown[0].c_str(), out.how.c_str(), out.trace.c_str(),
                static_cast<unsigned long long>(r.events), bytes_text(size).c_str());
    std::string peaks;
    for (const auto& d : r.devices)
      peaks += (peaks.empty() ? "" : "; ") + d.name + " " + bytes_text(d.peak_allocated.allocated) + " allocated, " +
               bytes_text(d.peak_reserved.reserved) + " reserved";
    std::printf("memlens: peak %s\n", peaks.empty() ? "none: no memory events" : peaks.c_str());
    std::string kinds;
    std::map<std::string, int> counts;
    for (const auto& f : r.findings) ++counts[std::string(finding_kind_name(f.kind))];
    for (const auto& [k, n] : counts) kinds += (kinds.empty() ? "" : ", ") + std::to_string(n) + " " + k;
    std::printf("memlens: %s; see `memlens report %s`\n", kinds.empty() ? "no findings" : ("findings: " + kinds).c_str(),
                out.trace.c_str());
    if (python) print_rank_traces(out.trace, started);
    wait_for_viewer(out.trace);
    return out.exit_status;
  }

 private:
  // memlens-viewer following `trace` as the program `pid` writes it; -1 when it cannot start.
  pid_t start_viewer(const std::string& trace, int pid) const {
    const std::string viewer = viewer_program(argv0_);
    const std::string pid_text = std::to_string(pid);
    pid_t child = fork();
    if (child == 0) {
      execlp(viewer.c_str(), viewer.c_str(), "--follow", "--pid", pid_text.c_str(), trace.c_str(), static_cast<char*>(nullptr));
      std::fprintf(stderr, "memlens: record --view: cannot start %s: %s (the recording goes on)\n", viewer.c_str(),
                   std::strerror(errno));
      _exit(127);
    }
    return child;
  }

  void wait_for_viewer(const std::string& trace) const {
    if (viewer_ <= 0) return;
    int status = 0;
    if (waitpid(viewer_, &status, WNOHANG) == 0) {
      std::printf("memlens: the viewer shows %s until you close it\n", trace.c_str());
      std::fflush(stdout);
      while (waitpid(viewer_, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }

  std::string argv0_;
  pid_t viewer_ = -1;
  bool view_ = false;
  RecordRequest request_;
  bool cupti_ = false;
  std::string stack_depth_;
};

}  // namespace

void add_record_command(CLI::App& app, Commands& out, const std::string& argv0) {
  out.push_back(std::make_unique<RecordCommand>(app, argv0));
}

}  // namespace memlens::cli
