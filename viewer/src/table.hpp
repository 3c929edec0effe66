#pragma once
// A sortable, filterable table of rows, drawn with ImGui's tables; selecting a row is
// how a report row moves the cursor and shows its source.
#include <imgui.h>

#include <cstdint>
#include <string>
#include <vector>

namespace memlens::viewer {

struct TableRow {
  std::vector<std::string> cells;
  std::vector<double> keys;  // per column: the number numeric columns sort by
  std::uint64_t time_ns = 0;
  std::string location;  // "file:line" of the row's site, "" for none
};

struct TableModel {
  std::vector<std::string> columns;
  std::vector<bool> numeric;
  std::vector<TableRow> rows;
  ImGuiTextFilter filter;
  int selected = -1;
};

// Returns the row selected this frame, or null.
const TableRow* draw_table(const char* id, TableModel& m, float height);

}  // namespace memlens::viewer
