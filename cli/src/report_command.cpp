// memlens report, and one command per section (memlens leaks FILE, ...): inputs analysed,
// rendered as text, Markdown, JSON or one HTML page.
#include <sstream>

#include "analysis_flags.hpp"
#include "command.hpp"
#include "exit_codes.hpp"
#include "memlens/analysis/render.hpp"
#include "output_file.hpp"
#include "report_follow.hpp"
#include "trace_input.hpp"

namespace memlens::cli {

namespace {

using namespace memlens::analysis;

class ReportCommand final : public Command {
 public:
  // `fixed`: the one section a single-section command shows; none for `report`.
  ReportCommand(CLI::App& parent, const std::string& name, const std::string& help, std::optional<Section> fixed)
      : Command(parent.add_subcommand(name, help)), fixed_(fixed) {
    // Not checked for existence here: --follow may wait for a recording to create it.
    app_->add_option("FILE", files_, "traces or PyTorch snapshots (several: one per rank)")->required();
    app_->add_option("--format", format_, "text, markdown, json, or html (one self-contained page: timelines, findings, tables)")
        ->check(CLI::IsMember({"text", "markdown", "json", "html"}))
        ->capture_default_str();
    app_->add_option("-o,--output", output_, "write the report to this file");
    app_->add_flag("--stacks", stacks_, "show the whole stack of each allocation site at the peaks (JSON always has them)");
    flags_.add(app_);
    if (!fixed_)
      app_->add_flag("--follow", follow_,
                     "follow a trace while it is recorded: a summary redrawn each second (the memory now and at its "
                     "peaks, the newest findings) until the recording ends");
    if (!fixed_)
      app_->add_option("--only", only_,
                       "comma-separated sections: summary,peak,leaks,broadcast,contiguity,"
                       "transfers,churn,fragmentation,timeline");
  }

  int run() override {
    const AnalysisOptions options = flags_.options();
    RenderOptions ro;
    ro.base_dir = working_dir();
    if (fixed_) ro.sections = {*fixed_};
    else if (!only_.empty()) ro.sections = sections(only_);
    ro.color = color_wanted(format_, output_);
    ro.stacks = stacks_;
    if (follow_) {
      if (files_.size() != 1)
        throw UsageError("report --follow: one trace at a time (got " + std::to_string(files_.size()) + ")");
      if (!output_.empty() || format_ != "text" || !only_.empty() || stacks_)
        throw UsageError("report --follow: draws its own summary on the terminal; leave out -o, --format, --only and --stacks");
      return follow_report(files_[0], options, ro);
    }
    OutputFile out(output_, files_, "-o");
    std::vector<Report> reports;
    for (const auto& f : files_) reports.push_back(load_trace(f, options, flags_.import).report);
    if (format_ == "json") emit(out, render_json(reports, ro));
    else if (format_ == "html") emit(out, render_html(reports, ro));
    else if (format_ == "markdown") emit(out, render_markdown(reports, ro));
    else emit(out, render_text(reports, ro));
    return kOk;
  }

 private:
  static std::vector<Section> sections(const std::string& list) {
    std::vector<Section> out;
    std::stringstream ss(list);
    for (std::string name; std::getline(ss, name, ',');) {
      auto s = parse_section(name);
      if (!s) {
        std::string known;
        for (Section k : all_sections()) known += (known.empty() ? "" : ", ") + std::string(section_name(k));
        throw UsageError("--only: unknown section '" + name + "' (expected " + known + ")");
      }
      out.push_back(*s);
    }
    return out;
  }

  std::vector<std::string> files_;
  std::string format_ = "text", only_, output_;
  bool stacks_ = false, follow_ = false;
  AnalysisFlags flags_;
  std::optional<Section> fixed_;
};

}  // namespace

void add_report_commands(CLI::App& app, Commands& out) {
  out.push_back(
      std::make_unique<ReportCommand>(app, "report", "every section of one or more traces (one per rank)", std::nullopt));
  const std::pair<Section, const char*> single_sections[] = {
      {Section::Summary, "devices, peaks and findings in a few lines"},
      {Section::Peak, "what was live at each device's peak, by category and site"},
      {Section::Leaks, "memory alive at the end, and sites that grow step after step"},
      {Section::Broadcast, "ops whose output broadcasting made far larger than their inputs"},
      {Section::Contiguity, "copies made to satisfy layout, with the views behind them"},
      {Section::Transfers, "copies between devices per site and step; data sent again"},
      {Section::Churn, "buffers and constants made afresh every step; temporaries"},
      {Section::Fragmentation, "reserved vs allocated and the largest free block, at peak and OOMs"},
      {Section::Timeline, "allocated memory over time"}};
  for (auto [section, help] : single_sections)
    out.push_back(std::make_unique<ReportCommand>(app, std::string(section_name(section)), help, section));
}

}  // namespace memlens::cli
