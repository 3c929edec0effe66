// The report tabs: each section's lines and tables as the report layout has them (the
// same columns, order and sort keys as text, Markdown and HTML), each table sortable and
// filterable. Selecting a row moves the cursor to when it first happened and shows its
// source.
#include <map>
#include <memory>

#include "memlens/analysis/diff.hpp"
#include "memlens/analysis/report_layout.hpp"
#include "panels.hpp"
#include "table.hpp"

namespace memlens::viewer {

namespace {

using namespace memlens::analysis;

// One section drawn: its lines and its tables, in the layout's order.
struct SectionView {
  std::vector<std::string> lines;  // before the first table, then between tables
  std::vector<TableModel> tables;
  std::vector<std::size_t> lines_before;  // lines shown before table i (index into lines)
};

SectionView view_of(const Block& b) {
  SectionView v;
  for (const Part& p : b.parts) {
    if (!p.table) {
      v.lines.push_back(p.text);
      continue;
    }
    TableModel m;
    m.columns = p.table->header;
    m.numeric = p.table->numeric;
    for (const Row& r : p.table->rows) m.rows.push_back({r.cells, r.keys, r.time_ns, r.location});
    v.lines_before.push_back(v.lines.size());
    v.tables.push_back(std::move(m));
  }
  return v;
}

const Block* find_block(const std::vector<Block>& blocks, std::string_view title) {
  for (const Block& b : blocks)
    if (b.title == title) return &b;
  return nullptr;
}

void pick(const TableRow* row, ViewState& v) {
  if (!row) return;
  if (row->time_ns) v.cursor_ns = row->time_ns;
  v.source = row->location;
}

// Lines and tables in order; the tables share the height left. Until a row is picked, a
// tab shows the source of its first (largest) row.
void draw_section(const char* id, SectionView& s, ViewState& v) {
  if (v.source.empty())
    for (const auto& t : s.tables)
      if (!t.rows.empty() && !t.rows[0].location.empty()) {
        v.source = t.rows[0].location;
        break;
      }
  std::size_t line = 0;
  for (std::size_t i = 0; i < s.tables.size(); ++i) {
    for (; line < s.lines_before[i]; ++line) ImGui::TextWrapped("%s", s.lines[line].c_str());
    float left = ImGui::GetContentRegionAvail().y;
    float h = i + 1 < s.tables.size() ? left / static_cast<float>(s.tables.size() - i) : 0;
    pick(draw_table((std::string(id) + std::to_string(i)).c_str(), s.tables[i], h), v);
  }
  for (; line < s.lines.size(); ++line) ImGui::TextWrapped("%s", s.lines[line].c_str());
}

Section section_of_tab(Tab t) {
  switch (t) {
    case Tab::Leaks:
      return Section::Leaks;
    case Tab::Broadcast:
      return Section::Broadcast;
    case Tab::Contiguity:
      return Section::Contiguity;
    case Tab::Transfers:
      return Section::Transfers;
    case Tab::Churn:
      return Section::Churn;
    default:
      return Section::Summary;
  }
}

}  // namespace

void draw_report_tab(Tab t, const Report& r, ViewState& v, const ReportDiff* diff) {
  static std::uint64_t built_for = ~std::uint64_t{0};
  static std::vector<Block> blocks;
  static std::map<std::string, SectionView> views;
  static std::unique_ptr<SectionView> diff_view;
  if (built_for != v.generation) {
    RenderOptions o;  // full site paths: the source view opens them
    blocks = layout_report({r}, o);
    views.clear();
    diff_view.reset();
    built_for = v.generation;
  }
  ImGui::BeginChild("tables", ImVec2(ImGui::GetContentRegionAvail().x * 0.62f, 0));
  if (t == Tab::Diff) {
    if (!diff) {
      ImGui::TextWrapped("Open a second trace to compare: memlens-viewer A.memtrace --diff B.memtrace");
    } else {
      if (!diff_view) {
        // The diff's blocks, one view: peaks, categories, sites, stacks, findings.
        Block all{2, "diff", {}};
        for (const Block& b : layout_diff(*diff, RenderOptions{}))
          for (const Part& p : b.parts) all.parts.push_back(p);
        diff_view = std::make_unique<SectionView>(view_of(all));
      }
      draw_section("diff", *diff_view, v);
    }
  } else if (t != Tab::Memory) {
    std::string name(section_name(section_of_tab(t)));
    auto it = views.find(name);
    if (it == views.end()) {
      const Block* b = find_block(blocks, name);
      it = views.emplace(name, b ? view_of(*b) : SectionView{}).first;
    }
    draw_section(name.c_str(), it->second, v);
  }
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("source", ImVec2(0, 0), true);
  draw_source(v.source);
  ImGui::EndChild();
}

}  // namespace memlens::viewer
