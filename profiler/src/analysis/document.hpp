#pragma once
// A report laid out as titled blocks of lines and tables, before it is rendered as text
// or Markdown: one layout, two renderers.
#include <optional>
#include <string>
#include <vector>

#include "memlens/analysis/render.hpp"

namespace memlens::analysis {

struct Table {
  std::vector<std::string> header;
  std::vector<bool> numeric;  // right-aligned columns
  int elastic = -1;           // the column shortened (from the left) when the table is too wide
  std::vector<std::vector<std::string>> rows;
};

struct Part {
  std::string text;            // a paragraph line, or
  std::optional<Table> table;  // a table
  bool finding = false;        // a line to highlight
};

struct Block {
  int level = 2;  // 1: a trace (rank), 2: a section
  std::string title;
  std::vector<Part> parts;
};

std::vector<Block> layout_report(const std::vector<Report>& reports, const RenderOptions& options);
std::string render_text(const std::vector<Block>& blocks, const RenderOptions& options);
std::string render_markdown(const std::vector<Block>& blocks, const std::string& title);

}  // namespace memlens::analysis
