// memlens baseline: an input's peaks and leaks, written for a later `check --baseline`.
#include "command.hpp"
#include "exit_codes.hpp"
#include "memlens/analysis/check.hpp"
#include "output_file.hpp"
#include "trace_input.hpp"

namespace memlens::cli {

namespace {

using namespace memlens::analysis;

class BaselineCommand final : public Command {
 public:
  explicit BaselineCommand(CLI::App& parent)
      : Command(parent.add_subcommand("baseline", "write a trace's peaks and leaks for later `check --baseline`")) {
    app_->add_option("FILE", file_, "a trace or a PyTorch snapshot")->required()->check(CLI::ExistingFile);
    app_->add_option("-o,--output", output_, "baseline JSON to write")->required();
    app_->add_option("--device", device_, "device to take (default: the busiest accelerator)");
  }

  int run() override {
    OutputFile out(output_, {file_}, "-o");
    Report r = load_trace(file_).report;
    Baseline b;
    try {
      b = make_baseline(r, device_);
    } catch (const CheckError& e) {
      throw UsageError(file_ + ": " + e.what());
    }
    emit(out, baseline_json(b));
    std::printf("memlens: baseline of %s on %s written to %s: peak %s allocated, %s reserved, %s leaked\n", file_.c_str(),
                b.device.c_str(), output_.c_str(), bytes_text(b.peak_allocated).c_str(), bytes_text(b.peak_reserved).c_str(),
                bytes_text(b.leaked_bytes).c_str());
    return kOk;
  }

 private:
  std::string file_, output_, device_;
};

}  // namespace

void add_baseline_command(CLI::App& app, Commands& out) { out.push_back(std::make_unique<BaselineCommand>(app)); }

}  // namespace memlens::cli
