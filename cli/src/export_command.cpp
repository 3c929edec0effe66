// memlens export: an input's events as Chrome trace JSON (Perfetto) or JSON lines.
#include "command.hpp"
#include "exit_codes.hpp"
#include "memlens/trace/export.hpp"
#include "output_file.hpp"
#include "trace_input.hpp"

namespace memlens::cli {

namespace {

class ExportCommand final : public Command {
 public:
  explicit ExportCommand(CLI::App& parent)
      : Command(parent.add_subcommand("export", "write a trace as Chrome trace JSON (Perfetto) or JSON lines")) {
    app_->add_option("FILE", file_, "a trace or a PyTorch snapshot")->required()->check(CLI::ExistingFile);
    auto* chrome = app_->add_option("--chrome", chrome_, "Chrome trace JSON to write (opens in ui.perfetto.dev)");
    auto* jsonl = app_->add_option("--json", json_, "JSON event stream to write, one event per line");
    chrome->excludes(jsonl);
  }

  int run() override {
    if (chrome_.empty() && json_.empty()) throw UsageError("export: give --chrome OUT.json or --json OUT.json");
    OutputFile out(chrome_.empty() ? json_ : chrome_, {file_}, chrome_.empty() ? "--json" : "--chrome");
    auto reader = open_trace(file_);
    if (!chrome_.empty()) profiler::export_chrome_trace(*reader, out.stream());
    else profiler::export_json_events(*reader, out.stream());
    out.commit();
    warn_if_incomplete(*reader);
    std::printf("memlens: wrote %s\n", out.is_stdout() ? "stdout" : out.path().c_str());
    return kOk;
  }

 private:
  std::string file_, chrome_, json_;
};

}  // namespace

void add_export_command(CLI::App& app, Commands& out) { out.push_back(std::make_unique<ExportCommand>(app)); }

}  // namespace memlens::cli
