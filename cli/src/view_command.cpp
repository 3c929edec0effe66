// memlens view: hands the input to memlens-viewer.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "command.hpp"
#include "exit_codes.hpp"

namespace memlens::cli {

namespace {

class ViewCommand final : public Command {
 public:
  ViewCommand(CLI::App& parent, std::string argv0)
      : Command(parent.add_subcommand("view", "open a trace or a PyTorch snapshot in memlens-viewer")), argv0_(std::move(argv0)) {
    app_->add_option("FILE", file_, "a trace or a PyTorch snapshot")->required()->check(CLI::ExistingFile);
  }

  int run() override {
    // Beside memlens when installed, in viewer/ of the same build tree, else on PATH.
    auto dir = std::filesystem::path(argv0_).parent_path();
    std::filesystem::path viewer = "memlens-viewer";
    std::error_code ec;
    for (auto candidate : {dir / "memlens-viewer", dir / ".." / "viewer" / "memlens-viewer"})
      if (std::filesystem::exists(candidate, ec)) {
        viewer = candidate;
        break;
      }
    execlp(viewer.c_str(), viewer.c_str(), file_.c_str(), static_cast<char*>(nullptr));
    throw UsageError("view: cannot start " + viewer.string() + ": " + std::strerror(errno) + " (build with -DMEMLENS_VIEWER=ON)");
  }

 private:
  std::string argv0_, file_;
};

}  // namespace

void add_view_command(CLI::App& app, Commands& out, const std::string& argv0) {
  out.push_back(std::make_unique<ViewCommand>(app, argv0));
}

}  // namespace memlens::cli
