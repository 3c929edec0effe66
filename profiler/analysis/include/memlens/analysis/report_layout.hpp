#pragma once
// A report laid out as titled blocks of lines and tables: the one layout every face draws
// from. Text and Markdown render its cells, the HTML page and the viewer's tabs its
// tables with their sort keys, times and sites, so columns and order never differ.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memlens/analysis/render.hpp"

namespace memlens::analysis {

struct Row {
  std::vector<std::string> cells;
  std::vector<double> keys;   // per column: what a numeric column sorts by (empty: sort by the text)
  std::uint64_t time_ns = 0;  // when the row's finding first happened (0: none)
  std::string location;       // its site's "file:line" (the viewer shows the source), "" for none
  Row(std::initializer_list<std::string> c) : cells(c) {}
  explicit Row(std::vector<std::string> c) : cells(std::move(c)) {}
  // The same row with its sort keys, time and site.
  Row&& with(std::vector<double> k, std::uint64_t time, std::string site_location) && {
    keys = std::move(k), time_ns = time, location = std::move(site_location);
    return std::move(*this);
  }
};

struct Table {
  std::vector<std::string> header;
  std::vector<bool> numeric;  // right-aligned columns
  int elastic = -1;           // the column shortened (from the left) when the table is too wide
  std::vector<Row> rows;
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
// The block `memlens report --follow` redraws while a recording runs, titled `state`: why it
// stopped or waits (`reason`, when given), per device the memory now and at its peaks, then
// the newest findings (at most `newest_findings`).
Block layout_live_summary(const Report& report, std::string_view state, const std::string& reason, const RenderOptions& options,
                          std::size_t newest_findings);
// The blocks as JSON (title, level, parts: text or table with header, numeric, rows of
// cells, keys, time_ns, location), for the HTML page.
std::string layout_json(const std::vector<Block>& blocks);
std::string render_text(const std::vector<Block>& blocks, const RenderOptions& options);
std::string render_markdown(const std::vector<Block>& blocks, const std::string& title);

}  // namespace memlens::analysis
