#pragma once
// A `memlens` subcommand: its flags on a CLI11 subcommand and what it does once chosen.
// Each lives in its own file (NAME_command.cpp); main() only adds them, in the order
// `--help` lists them, and runs the one the command line chose.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

namespace memlens::cli {

class Command {
 public:
  explicit Command(CLI::App* app) : app_(app) {}
  virtual ~Command() = default;
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;

  // The exit status (exit_codes.hpp); throws UsageError for bad usage or input.
  virtual int run() = 0;
  bool chosen() const { return app_->parsed(); }

 protected:
  CLI::App* app_;
};

using Commands = std::vector<std::unique_ptr<Command>>;

// `argv0`: where memlens runs from, to find memlens-viewer beside it (record --view, view).
void add_record_command(CLI::App& app, Commands& out, const std::string& argv0);
void add_report_commands(CLI::App& app, Commands& out);  // `report`, then one per section
void add_diff_command(CLI::App& app, Commands& out);
void add_export_command(CLI::App& app, Commands& out);
void add_replay_command(CLI::App& app, Commands& out);
void add_check_command(CLI::App& app, Commands& out);
void add_baseline_command(CLI::App& app, Commands& out);
void add_history_commands(CLI::App& app, Commands& out);  // `history add`, `history show`
void add_import_command(CLI::App& app, Commands& out);
void add_view_command(CLI::App& app, Commands& out, const std::string& argv0);

}  // namespace memlens::cli
