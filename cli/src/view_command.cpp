// memlens view: hands the input to memlens-viewer (to follow, with --follow).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "command.hpp"
#include "exit_codes.hpp"
#include "viewer_program.hpp"

namespace memlens::cli {

namespace {

class ViewCommand final : public Command {
 public:
  ViewCommand(CLI::App& parent, std::string argv0)
      : Command(parent.add_subcommand("view", "open a trace or a PyTorch snapshot in memlens-viewer")), argv0_(std::move(argv0)) {
    app_->add_option("FILE", file_, "a trace or a PyTorch snapshot")->required();
    app_->add_flag("--follow", follow_,
                   "follow a trace while it is recorded (the timeline grows; waits for the file if it is not there yet)");
  }

  int run() override {
    if (!follow_ && !std::filesystem::exists(file_)) throw UsageError(file_ + ": cannot open: No such file or directory");
    const std::string viewer = viewer_program(argv0_);
    const char* follow = follow_ ? "--follow" : nullptr;  // the argument list ends early without it
    execlp(viewer.c_str(), viewer.c_str(), file_.c_str(), follow, static_cast<char*>(nullptr));
    throw UsageError("view: cannot start " + viewer + ": " + std::strerror(errno) + " (build with -DMEMLENS_VIEWER=ON)");
  }

 private:
  std::string argv0_, file_;
  bool follow_ = false;
};

}  // namespace

void add_view_command(CLI::App& app, Commands& out, const std::string& argv0) {
  out.push_back(std::make_unique<ViewCommand>(app, argv0));
}

}  // namespace memlens::cli
