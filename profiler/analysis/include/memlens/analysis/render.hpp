#pragma once
// Reports for people (text for a 100-column terminal, Markdown) and for programs (JSON,
// docs/report-schema.md). Several reports (one trace per rank) render as one document.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memlens/analysis/report.hpp"

namespace memlens::analysis {

enum class Section { Summary, Peak, Leaks, Broadcast, Contiguity, Transfers, Churn, Fragmentation, Timeline };
inline constexpr int kReportSchemaVersion = 1;

std::string_view section_name(Section s);  // "summary", "peak", ...
std::optional<Section> parse_section(std::string_view name);
std::vector<Section> all_sections();
// The section a finding belongs to (leak and growth: Leaks; oom: Fragmentation; ...).
Section section_of(FindingKind k);

struct RenderOptions {
  std::vector<Section> sections = all_sections();
  bool color = false;       // ANSI colours in text
  std::size_t width = 100;  // text columns
  std::string base_dir;     // site paths under it are shown relative to it (text, Markdown)
  bool stacks = false;      // the whole stacks at each peak (text, Markdown; JSON always has them)
};

std::string render_text(const std::vector<Report>& reports, const RenderOptions& options);
std::string render_markdown(const std::vector<Report>& reports, const RenderOptions& options);
std::string render_json(const std::vector<Report>& reports, const RenderOptions& options);
// Text made safe inside XML, HTML and SVG (&, <, >, "): JUnit, the history's pictures.
std::string xml_escape(const std::string& s);
// One self-contained HTML page (no network: inline script and canvas): the JSON report,
// the source lines of each finding where the files can be read, and a page that draws the
// timelines (zoom by dragging), findings and sortable peak and fragmentation tables.
std::string render_html(const std::vector<Report>& reports, const RenderOptions& options);

// "linear_regression.cpp:30" for a site under base_dir, the full location otherwise,
// "<unknown>" for none.
std::string site_text(const SiteRef& s, std::string_view base_dir);

}  // namespace memlens::analysis
