// memlens diff A B: two inputs' peaks, categories, sites and findings side by side.
#include "command.hpp"
#include "exit_codes.hpp"
#include "memlens/analysis/diff.hpp"
#include "memlens/analysis/render.hpp"
#include "output_file.hpp"
#include "trace_input.hpp"

namespace memlens::cli {

namespace {

using namespace memlens::analysis;

class DiffCommand final : public Command {
 public:
  explicit DiffCommand(CLI::App& parent)
      : Command(parent.add_subcommand("diff", "compare two traces: peaks, categories, sites, findings")) {
    app_->add_option("A", a_, "the trace (or PyTorch snapshot) before")->required()->check(CLI::ExistingFile);
    app_->add_option("B", b_, "the trace (or PyTorch snapshot) after")->required()->check(CLI::ExistingFile);
    app_->add_option("--format", format_, "text, markdown, json, or html (both timelines on one scale)")
        ->check(CLI::IsMember({"text", "markdown", "json", "html"}))
        ->capture_default_str();
    app_->add_option("-o,--output", output_, "write the diff to this file");
  }

  int run() override {
    OutputFile out(output_, {a_, b_}, "-o");
    Report a = load_trace(a_).report, b = load_trace(b_).report;
    RenderOptions ro;
    ro.base_dir = working_dir();
    ro.color = color_wanted(format_, output_);
    ReportDiff d = diff_reports(a, b);
    emit(out, format_ == "html" ? render_diff_html(a, b, d, ro) : render_diff(d, format_, ro));
    return kOk;
  }

 private:
  std::string a_, b_, format_ = "text", output_;
};

}  // namespace

void add_diff_command(CLI::App& app, Commands& out) { out.push_back(std::make_unique<DiffCommand>(app)); }

}  // namespace memlens::cli
