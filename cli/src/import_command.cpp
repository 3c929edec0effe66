// memlens import: a PyTorch memory snapshot converted once into a trace, for repeated use.
#include <filesystem>

#include "analysis_flags.hpp"
#include "command.hpp"
#include "exit_codes.hpp"
#include "memlens/analysis/report.hpp"
#include "memlens/input/input_file.hpp"
#include "output_file.hpp"

namespace memlens::cli {

namespace {

class ImportCommand final : public Command {
 public:
  explicit ImportCommand(CLI::App& parent)
      : Command(parent.add_subcommand("import", "convert a PyTorch memory snapshot (pickle or JSON) into a trace")) {
    app_->add_option("FILE", file_, "torch.cuda.memory._dump_snapshot() output")->required()->check(CLI::ExistingFile);
    app_->add_option("-o,--output", output_, "trace to write")->required();
    add_snapshot_flags(app_, options_);
    app_->footer(
        "Every command reads snapshots directly too; import converts once, for repeated use.\n"
        "Example: memlens import run.pickle -o run.memtrace --step-at-scope 'ProfilerStep*'");
  }

  int run() override {
    if (output_ == "-") throw UsageError("import: -o must name a file (a trace is binary)");
    OutputFile out(output_, {file_}, "-o");
    snapshot::ImportSummary sum;
    try {
      sum = input::InputFile(file_).import_to(out.write_path(), options_);
    } catch (const input::InputError& e) {
      throw UsageError(e.what());
    }
    out.commit();
    std::error_code ec;
    auto size = std::filesystem::file_size(output_, ec);
    auto n = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
    std::printf("memlens: imported %s (%s, %llu trace entries, %llu device%s) to %s: %llu events, %s\n", file_.c_str(),
                sum.encoding == snapshot::SnapshotEncoding::Pickle ? "pickle" : "JSON", n(sum.entries), n(sum.devices),
                sum.devices == 1 ? "" : "s", output_.c_str(), n(sum.events), analysis::bytes_text(ec ? 0 : size).c_str());
    std::printf("memlens: %llu allocations in %llu segments existed before the first entry (rewound from the state at dump)\n",
                n(sum.blocks_at_start), n(sum.segments_at_start));
    if (sum.steps) std::printf("memlens: %llu steps marked\n", n(sum.steps));
    if (sum.skipped) std::printf("memlens: %llu entries of other actions (snapshot markers) skipped\n", n(sum.skipped));
    return kOk;
  }

 private:
  std::string file_, output_;
  snapshot::ImportOptions options_;
};

}  // namespace

void add_import_command(CLI::App& app, Commands& out) { out.push_back(std::make_unique<ImportCommand>(app)); }

}  // namespace memlens::cli
