#pragma once
// The CI gate: limits and a baseline checked against a Report, each check a verdict with
// what failed, by how much, and the sites responsible; JUnit XML for CI dashboards.
//
// Memory on the `sim` device is deterministic (the same program allocates the same
// blocks at the same offsets every run), so a baseline taken there is exact: a tolerance
// is room for intended change, not for run-to-run noise.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "memlens/analysis/report.hpp"
#include "memlens/common/error.hpp"

namespace memlens::analysis {

class CheckError : public Error {
  using Error::Error;
};

// What a later run is compared with (`memlens baseline`).
struct Baseline {
  std::string program;
  std::string device;
  std::uint64_t peak_allocated = 0, peak_reserved = 0, leaked_bytes = 0;
};
Baseline make_baseline(const Report& r, const std::string& device = "");
std::string baseline_json(const Baseline& b);
// Throws CheckError "NAME: not a memlens baseline: ..." on anything else.
Baseline parse_baseline(const std::string& text, const std::string& name);

struct CheckLimits {
  std::string device;  // "" = the report's main device
  std::optional<std::uint64_t> max_peak, max_reserved, max_leaked;
  std::vector<std::pair<Category, std::uint64_t>> max_category;  // a category's bytes at the peak, at most
  bool no_leaks = false, no_broadcast = false;
  std::optional<Baseline> baseline;
  double tolerance = 0.05;  // a baseline figure may grow by this fraction
};

struct CheckVerdict {
  std::string name;  // "max-peak", "baseline-peak", ...
  bool passed = true;
  std::string message;               // one line: the figure, the limit, by how much
  std::vector<std::string> details;  // the top sites responsible
  SiteId site = 0;                   // where the failure shows most (the top site at a peak), 0 for none
};

// Throws CheckError when limits.device names a device the trace does not have.
std::vector<CheckVerdict> run_checks(const Report& r, const CheckLimits& limits, const std::string& base_dir = "");
std::string junit_xml(const std::string& suite, const std::vector<CheckVerdict>& verdicts);
// GitHub Actions workflow commands: `::error file=F,line=L,title=...::message` for each
// failed check (at its site when it has one) and `::warning` for each finding at its
// source line; paths relative to `base_dir` (the checkout) so GitHub links them.
std::string github_annotations(const Report& r, const std::vector<CheckVerdict>& verdicts, const std::string& base_dir);
// A Markdown table of the verdicts with their details, for a job summary.
std::string check_markdown(const std::string& trace, const std::vector<CheckVerdict>& verdicts);

// "5%", "0.05", "12.5%" -> a fraction; throws CheckError on anything else.
double parse_tolerance(const std::string& text);

}  // namespace memlens::analysis
