// memlens: the command. Every subcommand (NAME_command.cpp) is a thin front over the
// libraries; main() adds them and runs the one chosen.
// Exit status: 0 all well, 1 a check failed, 2 bad usage or input (one line on stderr).
#include <cstdio>

#include "command.hpp"
#include "exit_codes.hpp"

namespace memlens::cli {

int main(int argc, char** argv) {
  CLI::App app{
      "memlens: memory profiler and diagnostics for tensor programs.\n"
      "Exit status: 0 all well, 1 a check failed, 2 bad usage or input.",
      "memlens"};
  app.set_version_flag("--version", "memlens " MEMLENS_VERSION);
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every command");

  Commands commands;
  add_record_command(app, commands, argv[0]);
  add_report_commands(app, commands);
  add_diff_command(app, commands);
  add_export_command(app, commands);
  add_replay_command(app, commands);
  add_check_command(app, commands);
  add_baseline_command(app, commands);
  add_history_commands(app, commands);
  add_import_command(app, commands);
  add_view_command(app, commands, argv[0]);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string where;
    for (auto* sub : app.get_subcommands()) where = std::string(" ") + sub->get_name();
    std::fprintf(stderr, "memlens%s: %s (see memlens%s --help)\n", where.c_str(), e.what(), where.c_str());
    return kBadInput;
  }

  try {
    for (auto& command : commands)
      if (command->chosen()) return command->run();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "memlens: %s\n", e.what());
    return kBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memlens: error: %s\n", e.what());
    return kBadInput;
  }
  return kBadInput;
}

}  // namespace memlens::cli

int main(int argc, char** argv) { return memlens::cli::main(argc, argv); }
