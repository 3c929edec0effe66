// The HTML report: the page (report_page.html, built in) with the JSON report and the
// source lines around each finding embedded, so the file stands alone.
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "memlens/analysis/diff.hpp"
#include "memlens/analysis/render.hpp"
#include "memlens/analysis/report_layout.hpp"
#include "memlens/common/input_file.hpp"
#include "report_page.hpp"

namespace memlens::analysis {

namespace {

constexpr int kContextLines = 2;
constexpr std::uintmax_t kMaxSourceBytes = 8 << 20;  // a source file larger than this is not read

// The lines around "file:line", or null when the file cannot be read here.
nlohmann::json source_lines(const std::string& location) {
  auto colon = location.rfind(':');
  if (colon == std::string::npos) return nullptr;
  int line = std::atoi(location.c_str() + colon + 1);
  std::string file = location.substr(0, colon);
  std::string why;
  int fd = open_regular_file(file, &why);  // never a FIFO or a device named by a trace
  if (fd < 0 || line <= 0) {
    if (fd >= 0) ::close(fd);
    return nullptr;
  }
  ::close(fd);
  std::error_code ec;
  if (std::filesystem::file_size(file, ec) > kMaxSourceBytes || ec) return nullptr;
  std::ifstream in(file);
  nlohmann::json lines = nlohmann::json::array();
  int first = std::max(1, line - kContextLines), n = 0;
  for (std::string text; std::getline(in, text) && n < line + kContextLines;) {
    ++n;
    if (n >= first) lines.push_back(text);
  }
  if (n < line) return nullptr;
  return {{"first", first}, {"line", line}, {"lines", lines}};
}

}  // namespace

namespace {

// The page with `doc` in it, made safe inside <script>: "</" could end the element, and
// JSON allows "<\/" for it.
std::string page_with(const nlohmann::json& doc) {
  std::string json = doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), safe;
  safe.reserve(json.size());
  for (std::size_t i = 0; i < json.size(); ++i) {
    safe += json[i];
    if (json[i] == '<' && i + 1 < json.size() && json[i + 1] == '/') safe += '\\';
  }
  std::string page(embedded::kReportPage);
  const std::string slot = "/*MEMLENS_DATA*/";
  page.replace(page.find(slot), slot.size(), safe);
  return page;
}

// The report's JSON with only what the page draws: a section's tables (transfers per
// step, ...) grow with the run; the findings already say what they found.
nlohmann::json page_data(const std::vector<Report>& reports, const RenderOptions& options) {
  nlohmann::json doc = nlohmann::json::parse(render_json(reports, options));
  for (std::size_t i = 0; i < reports.size(); ++i) {
    auto& trace = doc["traces"][i];
    for (const char* unused : {"transfers", "churn", "contiguity", "broadcast", "leaks", "allocations_by_site"})
      trace.erase(unused);
    // The sections' lines and tables as every face lays them out.
    trace["layout"] = nlohmann::json::parse(layout_json(layout_report({reports[i]}, options)));
  }
  return doc;
}

}  // namespace

std::string render_diff_html(const Report& a, const Report& b, const ReportDiff& diff, const RenderOptions& options) {
  nlohmann::json doc = page_data({a, b}, options);
  doc["diff"] = nlohmann::json::parse(render_diff(diff, "json", options));
  return page_with(doc);
}

std::string render_html(const std::vector<Report>& reports, const RenderOptions& options) {
  nlohmann::json doc = page_data(reports, options);
  nlohmann::json sources = nlohmann::json::object();
  for (const auto& trace : doc["traces"])
    for (const auto& f : trace["findings"])
      if (f["site"].is_string() && !sources.contains(f["site"].get<std::string>()))
        if (auto s = source_lines(f["site"].get<std::string>()); !s.is_null()) sources[f["site"].get<std::string>()] = s;
  doc["sources"] = sources;
  return page_with(doc);
}

}  // namespace memlens::analysis
