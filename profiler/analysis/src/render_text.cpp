// Text and Markdown renderers of the report layout, and the section names they share
// with the JSON renderer and the command line.
#include <algorithm>

#include "memlens/analysis/report_layout.hpp"

namespace memlens::analysis {

namespace {

constexpr Section kSections[] = {Section::Summary,   Section::Peak,          Section::Leaks,
                                 Section::Broadcast, Section::Contiguity,    Section::Transfers,
                                 Section::Churn,     Section::Fragmentation, Section::Timeline};

// Display width: UTF-8 continuation bytes take no column.
std::size_t columns(const std::string& s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xc0) != 0x80; }));
}

// Keeps the end of a too-long cell: the file name and line matter more than the folders.
std::string shorten_left(const std::string& s, std::size_t width) {
  if (columns(s) <= width || width < 4) return s;
  return "..." + s.substr(s.size() - (width - 3));
}

std::string pad(const std::string& s, std::size_t width, bool right) {
  std::size_t w = columns(s);
  if (w >= width) return s;
  return right ? std::string(width - w, ' ') + s : s + std::string(width - w, ' ');
}

// Breaks a long line at spaces; the first line indented by `first`, the rest by `rest`.
std::vector<std::string> wrap(const std::string& s, std::size_t width, std::size_t first, std::size_t rest) {
  std::vector<std::string> out;
  std::string line(first, ' ');
  bool empty = true;
  std::size_t at = 0;
  while (at <= s.size()) {
    std::size_t end = std::min(s.find(' ', at), s.size());
    std::string word = s.substr(at, end - at);
    at = end + 1;
    if (word.empty()) continue;
    word = shorten_left(word, width - rest);  // a long path keeps its file name and line
    if (!empty && columns(line) + 1 + columns(word) > width) {
      out.push_back(line);
      line = std::string(rest, ' ');
      empty = true;
    }
    line += (empty ? "" : " ") + word;
    empty = false;
  }
  if (!empty) out.push_back(line);
  return out;
}

std::vector<std::string> text_table(const Table& t, std::size_t width, std::size_t indent) {
  std::size_t n = t.header.size();
  std::vector<std::size_t> w(n, 0);
  for (std::size_t i = 0; i < n; ++i) w[i] = columns(t.header[i]);
  for (const auto& row : t.rows)
    for (std::size_t i = 0; i < n && i < row.cells.size(); ++i) w[i] = std::max(w[i], columns(row.cells[i]));
  std::size_t total = indent;
  for (auto x : w) total += x + 2;
  if (total > width && t.elastic >= 0) {
    auto& e = w[static_cast<std::size_t>(t.elastic)];
    e -= std::min(e - std::min<std::size_t>(e, 16), total - width);
  }
  std::vector<std::string> out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s(indent, ' ');
    for (std::size_t i = 0; i < n; ++i) {
      std::string c = i < cells.size() ? cells[i] : "";
      if (static_cast<int>(i) == t.elastic) c = shorten_left(c, w[i]);
      s += pad(c, w[i], t.numeric[i]);
      if (i + 1 < n) s += "  ";
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    out.push_back(s);
  };
  line(t.header);
  for (const auto& row : t.rows) line(row.cells);
  return out;
}

std::string md_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string_view section_name(Section s) {
  switch (s) {
    case Section::Summary:
      return "summary";
    case Section::Peak:
      return "peak";
    case Section::Leaks:
      return "leaks";
    case Section::Broadcast:
      return "broadcast";
    case Section::Contiguity:
      return "contiguity";
    case Section::Transfers:
      return "transfers";
    case Section::Churn:
      return "churn";
    case Section::Fragmentation:
      return "fragmentation";
    case Section::Timeline:
      return "timeline";
  }
  return "?";
}

std::optional<Section> parse_section(std::string_view name) {
  for (Section s : kSections)
    if (section_name(s) == name) return s;
  return std::nullopt;
}

std::vector<Section> all_sections() { return {std::begin(kSections), std::end(kSections)}; }

Section section_of(FindingKind k) {
  switch (k) {
    case FindingKind::Leak:
    case FindingKind::Growth:
      return Section::Leaks;
    case FindingKind::Broadcast:
    case FindingKind::MaterializedExpand:
      return Section::Broadcast;
    case FindingKind::LayoutCopy:
      return Section::Contiguity;
    case FindingKind::ResentTransfer:
      return Section::Transfers;
    case FindingKind::Churn:
      return Section::Churn;
    case FindingKind::Oom:
      return Section::Fragmentation;
  }
  return Section::Summary;
}

std::string site_text(const SiteRef& s, std::string_view base_dir) {
  if (s.location.empty()) return "<unknown>";
  std::string_view loc = s.location;
  if (!base_dir.empty()) {
    std::string prefix(base_dir);
    if (prefix.back() != '/') prefix += '/';
    if (loc.starts_with(prefix)) loc.remove_prefix(prefix.size());
  }
  return std::string(loc);
}

std::string render_text(const std::vector<Report>& reports, const RenderOptions& o) {
  return render_text(layout_report(reports, o), o);
}

std::string render_markdown(const std::vector<Report>& reports, const RenderOptions& o) {
  return render_markdown(layout_report(reports, o), "memlens report");
}

std::string render_text(const std::vector<Block>& blocks, const RenderOptions& o) {
  const char* bold = o.color ? "\x1b[1m" : "";
  const char* yellow = o.color ? "\x1b[33m" : "";
  const char* reset = o.color ? "\x1b[0m" : "";
  std::string out;
  for (const Block& b : blocks) {
    if (!out.empty()) out += "\n";
    std::string title = b.level == 1 ? "=== " + b.title + " ===" : b.title;
    for (auto& c : title) c = b.level == 2 ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    out += bold + title + reset + "\n";
    for (const Part& p : b.parts) {
      std::vector<std::string> lines = p.table ? text_table(*p.table, o.width, 2) : wrap(p.text, o.width, 2, 6);
      for (const auto& l : lines) out += (p.finding ? yellow : "") + l + (p.finding ? reset : "") + "\n";
    }
  }
  return out;
}

std::string render_markdown(const std::vector<Block>& blocks, const std::string& title) {
  std::string out = "# " + title + "\n";
  for (const Block& b : blocks) {
    out += "\n" + std::string(b.level == 1 ? "## " : "### ") + b.title + "\n\n";
    for (const Part& p : b.parts) {
      if (!p.table) {
        out += (p.finding ? "- **" + md_escape(p.text) + "**" : md_escape(p.text)) + "\n\n";
        continue;
      }
      const Table& t = *p.table;
      auto row = [&](const std::vector<std::string>& cells) {
        out += "|";
        for (const auto& c : cells) out += " " + md_escape(c) + " |";
        out += "\n";
      };
      row(t.header);
      out += "|";
      for (std::size_t i = 0; i < t.header.size(); ++i) out += t.numeric[i] ? " ---: |" : " --- |";
      out += "\n";
      for (const auto& r : t.rows) row(r.cells);
      out += "\n";
    }
  }
  return out;
}

}  // namespace memlens::analysis
