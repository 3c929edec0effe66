// memlens record: a program under the recorder (record.hpp), then a few lines on what the
// trace holds.
#include <filesystem>
#include <map>

#include "command.hpp"
#include "exit_codes.hpp"
#include "memlens/analysis/report.hpp"
#include "record.hpp"
#include "trace_input.hpp"

namespace memlens::cli {

namespace {

using namespace memlens::analysis;

// The CUPTI collector: in this build tree, else where it is installed, relative to this
// command.
std::string cupti_library() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  for (std::filesystem::path candidate : {std::filesystem::path(MEMLENS_CUPTI_BUILD_PATH), self / MEMLENS_CUPTI_INSTALL_PATH})
    if (!std::string(MEMLENS_CUPTI_BUILD_PATH).empty() && std::filesystem::exists(candidate, ec))
      return candidate.lexically_normal();
  throw UsageError("record: --cupti needs libmemlens_cupti.so, which this build does not have (no CUDA toolkit with CUPTI)");
}

class RecordCommand final : public Command {
 public:
  explicit RecordCommand(CLI::App& parent)
      : Command(parent.add_subcommand("record", "run a program linked with the memlens runtime under the recorder")) {
    app_->add_option("-o,--output", request_.output, "trace to write (default memlens-PROGRAM.memtrace)");
    app_->add_flag("--stacks", request_.stacks, "record native stacks on allocations (MEMLENS_STACKS=1)");
    app_->add_option("--stack-depth", request_.stack_depth, "deepest stack recorded (default 32)")->check(CLI::Range(1, 32));
    app_->add_option("--device", request_.device, "what serves the program's cuda(): sim, cuda or cpu")
        ->check(CLI::IsMember({"sim", "cuda", "cpu", "auto"}));
    app_->add_flag("--cupti", cupti_, "record any CUDA program through CUPTI (segments, pool blocks, copies, memsets)");
    app_->add_option("command", request_.command, "PROGRAM ARGS... (after --)")->required();
    app_->positionals_at_end();
    app_->footer(
        "Example: memlens record -o lr.memtrace -- build/samples/linear_regression 100\n"
        "Exits with the program's exit status (128+N when killed by signal N).");
  }

  int run() override {
    if (cupti_) request_.cupti_library = cupti_library();
    RecordOutcome out = record_program(request_);
    std::error_code ec;
    auto size = std::filesystem::file_size(out.trace, ec);
    if (ec || size == 0)
      throw UsageError(request_.command[0] + " (" + out.how + ") wrote no trace to " + out.trace +
                       ": is it linked with memlens::recorder?");
    LoadedTrace t = load_trace(out.trace);
    const Report& r = t.report;
    std::printf("memlens: recorded %s (%s) to %s: %llu events, %s\n", request_.command[0].c_str(), out.how.c_str(),
                out.trace.c_str(), static_cast<unsigned long long>(r.events), bytes_text(size).c_str());
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
    return out.exit_status;
  }

 private:
  RecordRequest request_;
  bool cupti_ = false;
};

}  // namespace

void add_record_command(CLI::App& app, Commands& out) { out.push_back(std::make_unique<RecordCommand>(app)); }

}  // namespace memlens::cli
