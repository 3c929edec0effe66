#include "table.hpp"

#include <algorithm>

namespace memlens::viewer {

const TableRow* draw_table(const char* id, TableModel& m, float height) {
  ImGui::PushID(id);
  m.filter.Draw("filter", 240);
  const TableRow* picked = nullptr;
  auto n = static_cast<int>(m.columns.size());
  ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersOuter |
                          ImGuiTableFlags_BordersV | ImGuiTableFlags_ScrollY | ImGuiTableFlags_Resizable;
  if (n > 0 && ImGui::BeginTable(id, n, flags, ImVec2(0, height))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    for (int c = 0; c < n; ++c)
      ImGui::TableSetupColumn(m.columns[static_cast<std::size_t>(c)].c_str(),
                              c == 0 ? ImGuiTableColumnFlags_WidthStretch : ImGuiTableColumnFlags_WidthFixed);
    ImGui::TableHeadersRow();
    if (ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs(); specs && specs->SpecsDirty && specs->SpecsCount > 0) {
      auto col = static_cast<std::size_t>(specs->Specs[0].ColumnIndex);
      bool up = specs->Specs[0].SortDirection == ImGuiSortDirection_Ascending;
      bool by_number = col < m.numeric.size() && m.numeric[col];
      std::stable_sort(m.rows.begin(), m.rows.end(), [&](const TableRow& a, const TableRow& b) {
        bool less = by_number ? a.keys[col] < b.keys[col] : a.cells[col] < b.cells[col];
        bool more = by_number ? a.keys[col] > b.keys[col] : a.cells[col] > b.cells[col];
        return up ? less : more;
      });
      m.selected = -1;
      specs->SpecsDirty = false;
    }
    for (std::size_t i = 0; i < m.rows.size(); ++i) {
      const TableRow& row = m.rows[i];
      std::string all;
      for (const auto& c : row.cells) all += c + " ";
      if (!m.filter.PassFilter(all.c_str())) continue;
      ImGui::TableNextRow();
      for (int c = 0; c < n; ++c) {
        ImGui::TableSetColumnIndex(c);
        const std::string& cell = row.cells[static_cast<std::size_t>(c)];
        if (c == 0) {
          ImGui::PushID(static_cast<int>(i));
          if (ImGui::Selectable(cell.c_str(), m.selected == static_cast<int>(i), ImGuiSelectableFlags_SpanAllColumns)) {
            m.selected = static_cast<int>(i);
            picked = &row;
          }
          ImGui::PopID();
        } else {
          ImGui::TextUnformatted(cell.c_str());
        }
      }
    }
    ImGui::EndTable();
  }
  ImGui::PopID();
  return picked;
}

}  // namespace memlens::viewer
