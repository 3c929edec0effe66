#pragma once
// The viewer's panels and the state they share: the time cursor, the visible time
// range, the selected tab and the selected site.
#include <imgui.h>

#include <cstdint>
#include <string>

#include "memlens/analysis/diff.hpp"
#include "memlens/analysis/report.hpp"
#include "session.hpp"

namespace memlens::viewer {

enum class Tab { Memory, Leaks, Broadcast, Contiguity, Transfers, Churn, Diff };
const char* tab_name(Tab t);
bool parse_tab(const std::string& name, Tab* out);

struct ViewState {
  std::uint64_t cursor_ns = 0;
  double begin_ns = 0, end_ns = 0;  // the visible part of the timeline
  bool fit = true;                  // fit the whole trace on the next frame
  bool by_site = false;             // the timeline stacks the top sites instead of categories
  Tab tab = Tab::Memory;
  bool tab_requested = true;     // select `tab` on the next frame
  std::string source;            // "file:line" shown with its lines, "" for none
  std::uint64_t generation = 0;  // changes whenever a trace (or the one compared) is read
  bool live = false;             // the trace is followed while it is recorded
  bool follow_newest = true;     // live: the cursor and the view stay at the newest time until moved
};

ImU32 category_color(analysis::Category c);

// Allocated memory over time, stacked by category, with reserved, steps, scopes and OOMs.
void draw_timeline(const analysis::Report& r, ViewState& v, float height);
// The allocator's segments and blocks at the cursor, and the live blocks by site.
void draw_memory(TraceSession& s, ViewState& v);
// The content of one report tab (not Memory); Diff compares with a second trace.
void draw_report_tab(Tab t, const analysis::Report& r, ViewState& v, const analysis::ReportDiff* diff);
// The lines around `location` ("file:line") when the file is readable.
void draw_source(const std::string& location);

}  // namespace memlens::viewer
