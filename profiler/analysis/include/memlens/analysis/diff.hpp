#pragma once
// Two reports side by side: peaks per device, bytes per category at the peak, bytes
// allocated per site, bytes per stack at the peak, sites that appeared or vanished,
// findings per kind.
#include <cstdint>
#include <string>
#include <vector>

#include "memlens/analysis/render.hpp"
#include "memlens/analysis/report_layout.hpp"
#include "memlens/analysis/report.hpp"

namespace memlens::analysis {

struct DeltaRow {
  std::string key;
  std::uint64_t a = 0, b = 0;
  std::int64_t delta() const { return static_cast<std::int64_t>(b) - static_cast<std::int64_t>(a); }
};

struct ReportDiff {
  std::string a_path, b_path;
  std::vector<DeltaRow> peak_allocated, peak_reserved;  // by device
  std::vector<DeltaRow> categories;                     // at the main device's peak
  std::vector<DeltaRow> sites;                          // bytes allocated over the trace, changed ones
  std::vector<DeltaRow> stacks;                         // live at the main device's peak, per stack, changed ones
  std::vector<std::string> new_sites, vanished_sites;
  std::vector<DeltaRow> findings;  // count per kind
};

ReportDiff diff_reports(const Report& a, const Report& b);
// A stack as a diff names it: its innermost Python frames by file name, outermost first,
// so a shortened column keeps the innermost ("train.py:40 > model.py:30"); else its site.
std::string stack_key(const Report& r, const StackBytes& s);
// The diff laid out for every face (render_diff, the viewer's diff tab).
std::vector<Block> layout_diff(const ReportDiff& d, const RenderOptions& options);
// format: "text", "markdown" or "json".
std::string render_diff(const ReportDiff& d, const std::string& format, const RenderOptions& options);
// One self-contained HTML page: both runs' timelines on one time and bytes scale, then the
// peaks, sites and stacks that changed (render_html's page).
std::string render_diff_html(const Report& a, const Report& b, const ReportDiff& d, const RenderOptions& options);

}  // namespace memlens::analysis
