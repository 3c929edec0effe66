// memlens history add|show: a program's memory across commits, kept in an SQLite file.
#include <filesystem>

#include "command.hpp"
#include "exit_codes.hpp"
#include "memlens/analysis/history.hpp"
#include "memlens/analysis/render.hpp"
#include "output_file.hpp"
#include "trace_input.hpp"

namespace memlens::cli {

namespace {

using namespace memlens::analysis;

class HistoryAddCommand final : public Command {
 public:
  explicit HistoryAddCommand(CLI::App* history)
      : Command(history->add_subcommand("add", "store a run's peaks, leaks, findings and top sites")) {
    app_->add_option("RUN", run_file_, "a trace or a PyTorch snapshot")->required()->check(CLI::ExistingFile);
    app_->add_option("--commit", commit_, "the commit the run was made at")->required();
    app_->add_option("--device", device_, "device to take (default: the busiest accelerator)");
    app_->add_option("--db", db_, "the history file")->capture_default_str();
  }

  int run() override {
    if (commit_.empty()) throw UsageError("history add: give --commit (e.g. --commit \"$(git rev-parse HEAD)\")");
    Report r = load_trace(run_file_).report;
    std::error_code ec;
    const bool existed = std::filesystem::exists(db_, ec);
    try {
      HistoryRun run = history_run(r, commit_, device_);
      RunHistory history(db_);
      history.add(run);
      std::printf("memlens: added %s at %s to %s: peak %s allocated on %s (run %lld of %s)\n", run_file_.c_str(), commit_.c_str(),
                  db_.c_str(), bytes_text(run.peak_allocated).c_str(), run.device.c_str(), static_cast<long long>(run.id),
                  run.program.c_str());
    } catch (const HistoryError& e) {
      if (!existed) std::filesystem::remove(db_, ec);  // a failed add leaves no new database behind
      throw UsageError(e.what());
    }
    return kOk;
  }

 private:
  std::string db_ = "memlens-history.sqlite", run_file_, commit_, device_;
};

class HistoryShowCommand final : public Command {
 public:
  explicit HistoryShowCommand(CLI::App* history)
      : Command(history->add_subcommand("show", "each program's runs, and the commit that moved peak memory most")) {
    app_->add_option("--program", program_, "only this program");
    app_->add_option("--format", format_, "text, svg (peak allocated over the runs) or html")
        ->check(CLI::IsMember({"text", "svg", "html"}))
        ->capture_default_str();
    app_->add_option("-o,--output", output_, "write it to this file");
    app_->add_option("--db", db_, "the history file")->capture_default_str();
  }

  int run() override {
    OutputFile out(output_, {db_}, "-o");
    std::vector<HistoryRun> runs;
    try {
      runs = RunHistory(db_).runs(program_);
    } catch (const HistoryError& e) {
      throw UsageError(e.what());
    }
    if (format_ == "svg") emit(out, history_svg(runs));
    else if (format_ == "html")
      emit(out, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>memlens history</title></head><body>\n" +
                    history_svg(runs) + "<pre>" + xml_escape(history_text(runs)) + "</pre>\n</body></html>\n");
    else emit(out, history_text(runs));
    return kOk;
  }

 private:
  std::string db_ = "memlens-history.sqlite", program_, format_ = "text", output_;
};

}  // namespace

void add_history_commands(CLI::App& app, Commands& out) {
  auto* history = app.add_subcommand("history", "a program's memory across commits, kept in an SQLite file");
  history->require_subcommand(1);
  history->footer(
      "Example, in CI after each commit's memory test:\n"
      "  memlens history add run.memtrace --commit \"$(git rev-parse HEAD)\"\n"
      "  memlens check run.memtrace --against-history --tolerance 5%");
  out.push_back(std::make_unique<HistoryAddCommand>(history));
  out.push_back(std::make_unique<HistoryShowCommand>(history));
}

}  // namespace memlens::cli
