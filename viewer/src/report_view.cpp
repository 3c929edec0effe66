// The report tabs: each section a sortable, filterable table built once per report.
// Selecting a row moves the cursor to when it first happened and shows its source.
#include <map>

#include "memlens/runtime/memory.hpp"
#include "panels.hpp"
#include "table.hpp"

namespace memlens::viewer {

namespace {

using namespace memlens::analysis;

std::string site(const Report& r, SiteId id) { return r.site(id).location.empty() ? "<unknown>" : r.site(id).location; }
double num(std::uint64_t v) { return static_cast<double>(v); }

TableModel model(std::vector<std::string> columns, std::vector<bool> numeric) {
  TableModel m;
  m.columns = std::move(columns);
  m.numeric = std::move(numeric);
  return m;
}

// Every table of every tab, for one report.
struct Tables {
  TableModel leaks = model({"site", "category", "bytes", "blocks"}, {false, false, true, true});
  TableModel growth = model({"growing site", "per step", "steps", "last"}, {false, true, true, true});
  TableModel broadcast = model({"site", "op", "inputs", "output", "factor", "bytes", "count"}, {false, false, false, false, true, true, true});
  TableModel contiguity = model({"site", "reason", "after views", "count", "bytes"}, {false, false, false, true, true});
  TableModel transfers = model({"site", "from", "to", "count", "bytes", "steps"}, {false, false, false, true, true, true});
  TableModel resent = model({"resent from", "bytes each", "sources", "sends", "steps"}, {false, true, true, true, true});
  TableModel churn = model({"buffer every step at", "size", "allocs", "steps"}, {false, true, true, true});
  TableModel temporaries = model({"temporaries at", "count", "bytes"}, {false, true, true});
  TableModel diff_sites = model({"bytes allocated at", "A", "B", "change"}, {false, true, true, true});
  TableModel diff_categories = model({"category at peak", "A", "B", "change"}, {false, true, true, true});

  explicit Tables(const Report& r) {
    for (const auto& g : r.leaks.alive_at_end)
      leaks.rows.push_back({{site(r, g.site), std::string(profiler::category_name(g.category)), bytes_text(g.bytes), std::to_string(g.blocks)},
                            {0, 0, num(g.bytes), num(g.blocks)}, g.time_ns, r.site(g.site).location});
    for (const auto& g : r.leaks.growth)
      growth.rows.push_back({{site(r, g.site), bytes_text(static_cast<std::uint64_t>(g.bytes_per_step)), std::to_string(g.steps_observed), bytes_text(g.last_bytes)},
                             {0, g.bytes_per_step, num(g.steps_observed), num(g.last_bytes)}, g.time_ns, r.site(g.site).location});
    for (const auto& f : r.broadcast.findings) {
      std::string in;
      for (const auto& s : f.inputs) in += (in.empty() ? "" : " ") + shape_text(s);
      char factor[32];
      std::snprintf(factor, sizeof factor, "%.1f", f.factor);
      broadcast.rows.push_back({{site(r, f.site), f.op, in, shape_text(f.output), factor, bytes_text(f.bytes), std::to_string(f.count)},
                                {0, 0, 0, 0, f.factor, num(f.bytes), num(f.count)}, f.time_ns, r.site(f.site).location});
    }
    for (const auto& c : r.contiguity.copies)
      contiguity.rows.push_back({{site(r, c.site), std::string(profiler::copy_reason_name(c.reason)), c.view_chain.empty() ? "-" : c.view_chain,
                                  std::to_string(c.count), bytes_text(c.bytes)},
                                 {0, 0, 0, num(c.count), num(c.bytes)}, c.time_ns, r.site(c.site).location});
    for (const auto& t : r.transfers.sites)
      transfers.rows.push_back({{site(r, t.site), t.from, t.to, std::to_string(t.count), bytes_text(t.bytes), std::to_string(t.steps)},
                                {0, 0, 0, num(t.count), num(t.bytes), num(t.steps)}, 0, r.site(t.site).location});
    for (const auto& t : r.transfers.resent)
      resent.rows.push_back({{site(r, t.site), bytes_text(t.bytes), std::to_string(t.sources), std::to_string(t.times), std::to_string(t.steps)},
                             {0, num(t.bytes), num(t.sources), num(t.times), num(t.steps)}, t.time_ns, r.site(t.site).location});
    for (const auto& c : r.churn.findings)
      churn.rows.push_back({{site(r, c.site), bytes_text(c.size), std::to_string(c.allocs), std::to_string(c.steps)},
                            {0, num(c.size), num(c.allocs), num(c.steps)}, c.time_ns, r.site(c.site).location});
    for (const auto& t : r.churn.temporaries)
      temporaries.rows.push_back({{site(r, t.site), std::to_string(t.count), bytes_text(t.bytes)}, {0, num(t.count), num(t.bytes)}, 0,
                                  r.site(t.site).location});
  }

  void set_diff(const ReportDiff& d) {
    auto fill = [](TableModel& m, const std::vector<DeltaRow>& rows) {
      m.rows.clear();
      for (const auto& x : rows)
        m.rows.push_back({{x.key, bytes_text(x.a), bytes_text(x.b), (x.delta() > 0 ? "+" : "") + format_bytes(x.delta())},
                          {0, num(x.a), num(x.b), static_cast<double>(x.delta())}, 0, x.key});
    };
    fill(diff_sites, d.sites);
    fill(diff_categories, d.categories);
  }
};

void pick(const TableRow* row, ViewState& v) {
  if (!row) return;
  if (row->time_ns) v.cursor_ns = row->time_ns;
  v.source = row->location;
}

// Until a row is picked, a tab shows the source of its first (largest) row.
void draw_main_table(const char* id, TableModel& m, float height, ViewState& v) {
  if (v.source.empty() && !m.rows.empty()) v.source = m.rows[0].location;
  pick(draw_table(id, m, height), v);
}

}  // namespace

void draw_report_tab(Tab t, const Report& r, ViewState& v, const ReportDiff* diff) {
  static std::uint64_t built_for = ~std::uint64_t{0};
  static std::unique_ptr<Tables> tables;
  static bool has_diff = false;
  if (built_for != v.generation || !tables) tables = std::make_unique<Tables>(r), built_for = v.generation, has_diff = false;
  if (diff && !has_diff) tables->set_diff(*diff), has_diff = true;
  float h = ImGui::GetContentRegionAvail().y;
  ImGui::BeginChild("tables", ImVec2(ImGui::GetContentRegionAvail().x * 0.62f, 0));
  switch (t) {
    case Tab::Leaks:
      ImGui::Text("%s leaked in %llu blocks; %s expected to live on", bytes_text(r.leaks.leaked_bytes).c_str(),
                  static_cast<unsigned long long>(r.leaks.leaked_blocks), bytes_text(r.leaks.expected_bytes).c_str());
      draw_main_table("leaks", tables->leaks, h * 0.45f, v);
      draw_main_table("growth", tables->growth, 0, v);
      break;
    case Tab::Broadcast:
      ImGui::Text("%llu ops broadcast; flagged at %gx and %s", static_cast<unsigned long long>(r.broadcast.broadcast_ops),
                  r.broadcast.threshold, bytes_text(r.broadcast.floor_bytes).c_str());
      draw_main_table("broadcast", tables->broadcast, 0, v);
      break;
    case Tab::Contiguity:
      ImGui::Text("%llu layout copies, %s", static_cast<unsigned long long>(r.contiguity.count), bytes_text(r.contiguity.bytes).c_str());
      draw_main_table("contiguity", tables->contiguity, 0, v);
      break;
    case Tab::Transfers:
      ImGui::Text("%llu copies between devices, %s", static_cast<unsigned long long>(r.transfers.count), bytes_text(r.transfers.bytes).c_str());
      draw_main_table("transfers", tables->transfers, h * 0.45f, v);
      pick(draw_table("resent", tables->resent, 0), v);
      break;
    case Tab::Churn:
      draw_main_table("churn", tables->churn, h * 0.4f, v);
      pick(draw_table("temporaries", tables->temporaries, 0), v);
      break;
    case Tab::Diff:
      if (!diff) {
        ImGui::TextWrapped("Open a second trace to compare: memlens-viewer A.memtrace --diff B.memtrace");
        break;
      }
      ImGui::Text("A: %s", diff->a_path.c_str());
      ImGui::Text("B: %s", diff->b_path.c_str());
      for (const auto& p : diff->peak_allocated)
        ImGui::Text("%s peak allocated: %s -> %s (%s%s)", p.key.c_str(), bytes_text(p.a).c_str(), bytes_text(p.b).c_str(), p.delta() > 0 ? "+" : "",
                    format_bytes(p.delta()).c_str());
      pick(draw_table("diff categories", tables->diff_categories, h * 0.3f), v);
      pick(draw_table("diff sites", tables->diff_sites, 0), v);
      break;
    case Tab::Memory:
      break;
  }
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("source", ImVec2(0, 0), true);
  draw_source(v.source);
  ImGui::EndChild();
}

}  // namespace memlens::viewer
