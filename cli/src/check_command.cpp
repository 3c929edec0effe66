// memlens check: the CI gate. Limits, a baseline and the run history, each a verdict;
// exit 1 when one fails.
#include <optional>

#include "analysis_flags.hpp"
#include "command.hpp"
#include "exit_codes.hpp"
#include "flag_values.hpp"
#include "memlens/analysis/check.hpp"
#include "memlens/analysis/history.hpp"
#include "output_file.hpp"
#include "trace_input.hpp"

namespace memlens::cli {

namespace {

using namespace memlens::analysis;

class CheckCommand final : public Command {
 public:
  explicit CheckCommand(CLI::App& parent)
      : Command(parent.add_subcommand("check", "the CI gate: limits and a baseline; exit 1 when one fails")) {
    app_->add_option("FILE", file_, "a trace or a PyTorch snapshot")->required()->check(CLI::ExistingFile);
    app_->add_option("--device", device_, "device the limits speak of (default: the busiest accelerator)");
    app_->add_option("--max-peak", max_peak_, "peak allocated at most this, e.g. 512MiB");
    app_->add_option("--max-reserved", max_reserved_, "peak reserved at most this");
    app_->add_flag("--no-leaks", no_leaks_, "fail on memory alive at the end or growing step after step");
    app_->add_option("--max-leaked", max_leaked_, "leaked bytes at most this");
    app_->add_option("--max-category", max_category_,
                     "a category's bytes at the peak at most this, e.g. optimizer_state=20GiB (repeatable)");
    app_->add_flag("--no-broadcast", no_broadcast_, "fail on broadcast findings");
    app_->add_option("--baseline", baseline_, "a file from `memlens baseline`")->check(CLI::ExistingFile);
    app_->add_option("--tolerance", tolerance_, "how much a baseline figure may grow")->capture_default_str();
    app_->add_option("--junit", junit_, "write the verdicts as JUnit XML");
    app_->add_flag("--against-history", against_history_,
                   "fail when peak allocated rises above the median of the program's last runs in the history (by --tolerance)");
    app_->add_option("--db", history_db_, "the history file (memlens history add)")->capture_default_str();
    app_->add_option("--history-runs", history_runs_, "how many of the last runs --against-history compares with")
        ->capture_default_str();
    app_->add_option("--format", format_,
                     "text; github (Actions annotations at the source lines: failed checks and every finding); "
                     "markdown (a table for $GITHUB_STEP_SUMMARY)")
        ->check(CLI::IsMember({"text", "github", "markdown"}))
        ->capture_default_str();
    flags_.add(app_);
    app_->footer("On sim, memory is deterministic: a baseline is exact and a tolerance only allows for intended change.");
  }

  int run() override {
    CheckLimits l = limits();
    const std::size_t last_runs = count_flag("--history-runs", history_runs_, 1, 100000);
    const AnalysisOptions options = flags_.options();
    std::optional<OutputFile> junit_out;
    if (!junit_.empty())
      junit_out.emplace(junit_, std::vector<std::string>{file_, baseline_, against_history_ ? history_db_ : ""}, "--junit");
    Report r = load_trace(file_, options, flags_.import).report;
    std::vector<CheckVerdict> verdicts;
    try {
      verdicts = run_checks(r, l, working_dir());
    } catch (const CheckError& e) {
      throw UsageError(file_ + ": " + e.what());
    }
    if (against_history_) verdicts.push_back(history_verdict(r, l, last_runs));
    bool ok = true;
    for (const auto& v : verdicts) ok = ok && v.passed;
    if (format_ == "github") {
      std::fputs(github_annotations(r, verdicts, working_dir()).c_str(), stdout);
    } else if (format_ == "markdown") {
      std::fputs(check_markdown(file_, verdicts).c_str(), stdout);
    } else {
      for (const auto& v : verdicts) {
        std::printf("%s %s: %s\n", v.passed ? "PASS" : "FAIL", v.name.c_str(), v.message.c_str());
        for (const auto& d : v.details) std::printf("       %s\n", d.c_str());
      }
    }
    if (junit_out) emit(*junit_out, junit_xml(file_, verdicts));
    if (format_ != "markdown") std::printf("memlens check: %s (%zu checks)\n", ok ? "passed" : "FAILED", verdicts.size());
    return ok ? kOk : kCheckFailed;
  }

 private:
  CheckLimits limits() const {
    CheckLimits l;
    l.device = device_;
    // A flag given empty is a bad value, not an absent limit.
    if (app_->count("--max-peak")) l.max_peak = byte_flag("--max-peak", max_peak_);
    if (app_->count("--max-reserved")) l.max_reserved = byte_flag("--max-reserved", max_reserved_);
    if (app_->count("--max-leaked")) l.max_leaked = byte_flag("--max-leaked", max_leaked_);
    for (const std::string& limit : max_category_) l.max_category.push_back(category_limit(limit));
    l.no_leaks = no_leaks_, l.no_broadcast = no_broadcast_;
    try {
      l.tolerance = parse_tolerance(tolerance_);
    } catch (const CheckError& e) {
      throw UsageError(std::string("--tolerance: ") + e.what());
    }
    try {
      if (!baseline_.empty()) l.baseline = parse_baseline(read_input_file(baseline_, kMaxBaselineFileBytes), baseline_);
    } catch (const CheckError& e) {
      throw UsageError(e.what());
    }
    if (!l.max_peak && !l.max_reserved && !l.max_leaked && l.max_category.empty() && !l.no_leaks && !l.no_broadcast &&
        !l.baseline && !against_history_)
      throw UsageError(
          "check: nothing to check (give --max-peak, --max-reserved, --max-category, --max-leaked, --no-leaks, "
          "--no-broadcast, --baseline or --against-history)");
    return l;
  }

  // "optimizer_state=20GiB": a category by its name and a byte size.
  static std::pair<Category, std::uint64_t> category_limit(const std::string& text) {
    const auto eq = text.find('=');
    const std::string name = text.substr(0, eq);
    std::string names;
    for (std::size_t c = 0; c < kCategoryCount; ++c) {
      const std::string_view n = category_name(static_cast<Category>(c));
      if (n == name && eq != std::string::npos)
        return {static_cast<Category>(c), byte_flag("--max-category " + name, text.substr(eq + 1))};
      names += (c ? ", " : "") + std::string(n);
    }
    throw UsageError("--max-category: expected CATEGORY=SIZE with CATEGORY one of " + names + ", got '" + text + "'");
  }

  CheckVerdict history_verdict(const Report& r, const CheckLimits& l, std::size_t last_runs) const {
    try {
      RunHistory history(history_db_);
      HistoryVerdict h = check_against_history(history_run(r, "", device_), history.runs(r.program), last_runs, l.tolerance);
      CheckVerdict v{"history", h.passed, h.message, {}};
      if (const DeviceReport* d = device_.empty() ? r.main_device() : r.device(device_); d && !d->peak_allocated.by_site.empty())
        v.site = d->peak_allocated.by_site.front().site;
      return v;
    } catch (const std::exception& e) {
      throw UsageError(e.what());
    }
  }

  std::string file_, device_, max_peak_, max_reserved_, max_leaked_, baseline_, tolerance_ = "5%", junit_, format_ = "text";
  std::vector<std::string> max_category_;
  std::string history_db_ = "memlens-history.sqlite";  // --against-history: the history file
  std::string history_runs_ = "5";
  bool no_leaks_ = false, no_broadcast_ = false, against_history_ = false;
  AnalysisFlags flags_;
};

}  // namespace

void add_check_command(CLI::App& app, Commands& out) { out.push_back(std::make_unique<CheckCommand>(app)); }

}  // namespace memlens::cli
