// The allocator at the cursor: each segment a bar, its live blocks drawn in their
// category's colour at their offset, hover for the block and the tensors that view it,
// click to keep it; and the live blocks grouped by site and category in a table.
#include <map>
#include <string>

#include "panels.hpp"
#include "table.hpp"

namespace memlens::viewer {

namespace {

using analysis::bytes_text;

// The block, its site, the tensors that view it, and its stack: whole when kept (clicked),
// the innermost frames in a tooltip.
std::string block_text(const analysis::MemoryAt& m, const analysis::BlockAt& b, bool whole_stack) {
  char head[160];
  std::snprintf(head, sizeof head, "block 0x%llx: %s (asked %s), stream %d, %s\nallocated at %.6f s",
                static_cast<unsigned long long>(b.address), bytes_text(b.size).c_str(), bytes_text(b.requested).c_str(), b.stream,
                std::string(profiler::category_name(b.category)).c_str(), static_cast<double>(b.time_ns) / 1e9);
  std::string out = head;
  out += "\nsite: " + (m.sites[b.site].location.empty() ? std::string("<unknown>") : m.sites[b.site].location);
  if (!m.sites[b.site].function.empty()) out += " (" + m.sites[b.site].function + ")";
  for (const auto& v : b.views)
    out += "\n  tensor " + std::to_string(v.tensor) + ": " + std::string(profiler::view_kind_name(v.kind)) + " " +
           std::string(dtype_repr(v.dtype)) + " " + analysis::shape_text(v.sizes) + " strides " +
           analysis::shape_text(v.strides) + " offset " + std::to_string(v.offset);
  if (b.views.empty()) out += "\n  no view recorded: one tensor owns it";
  const auto& frames = m.stacks[b.stack].frames;
  constexpr std::size_t kTooltipFrames = 12;
  if (!frames.empty()) out += "\nstack, innermost first:";
  for (std::size_t i = 0; i < frames.size(); ++i) {
    if (!whole_stack && i == kTooltipFrames) {
      out += "\n  ... " + std::to_string(frames.size() - i) + " more frames (click to keep the whole stack)";
      break;
    }
    const auto& f = frames[i];
    out += "\n  " + (f.location.empty() ? std::string("?") : f.location) + "  " + f.function;
  }
  return out;
}

}  // namespace

void draw_memory(TraceSession& s, ViewState& v) {
  const analysis::MemoryAt& m = s.memory_at(v.cursor_ns);
  static std::string kept;  // the clicked block's text
  static std::uint64_t table_time = ~std::uint64_t{0}, table_generation = 0;
  static TableModel live;
  ImGui::Text("at %.6f s", static_cast<double>(m.time_ns) / 1e9);
  if (m.devices.empty()) ImGui::TextUnformatted("nothing allocated at the cursor");
  ImDrawList* dl = ImGui::GetWindowDrawList();
  float width = ImGui::GetContentRegionAvail().x * 0.62f;
  ImGui::BeginChild("segments", ImVec2(width, 0), true);
  for (const auto& d : m.devices) {
    ImGui::Text("%s: %s allocated, %s reserved, largest free block %s, %zu segments", d.name.c_str(),
                bytes_text(d.allocated).c_str(), bytes_text(d.reserved).c_str(), bytes_text(d.largest_free_block).c_str(),
                d.segments.size());
    std::uint64_t largest = 1;
    for (const auto& seg : d.segments) largest = std::max(largest, seg.size);
    float bar_w = ImGui::GetContentRegionAvail().x - 8;
    for (const auto& seg : d.segments) {
      ImVec2 at = ImGui::GetCursorScreenPos();
      float w = std::max(4.0f, bar_w * static_cast<float>(static_cast<double>(seg.size) / static_cast<double>(largest)));
      ImGui::InvisibleButton(("seg" + std::to_string(seg.address)).c_str(), ImVec2(bar_w, 14));
      dl->AddRectFilled(at, ImVec2(at.x + w, at.y + 12), IM_COL32(60, 60, 66, 255));  // free
      const analysis::BlockAt* hovered = nullptr;
      for (const auto& b : seg.blocks) {
        float xa = at.x + w * static_cast<float>(static_cast<double>(b.address - seg.address) / static_cast<double>(seg.size));
        float xb = std::max(xa + 1, at.x + w * static_cast<float>(static_cast<double>(b.address + b.size - seg.address) /
                                                                  static_cast<double>(seg.size)));
        dl->AddRectFilled(ImVec2(xa, at.y), ImVec2(xb, at.y + 12), category_color(b.category));
        dl->AddRect(ImVec2(xa, at.y), ImVec2(xb, at.y + 12), IM_COL32(0, 0, 0, 120));
        ImVec2 mouse = ImGui::GetIO().MousePos;
        if (ImGui::IsItemHovered() && mouse.x >= xa && mouse.x <= xb) hovered = &b;
      }
      if (hovered) {
        ImGui::SetTooltip("%s", block_text(m, *hovered, false).c_str());
        if (ImGui::IsItemClicked()) kept = block_text(m, *hovered, true);
      } else if (ImGui::IsItemHovered()) {
        ImGui::SetTooltip("segment 0x%llx: %s, %zu live blocks", static_cast<unsigned long long>(seg.address),
                          bytes_text(seg.size).c_str(), seg.blocks.size());
      }
    }
    if (!d.loose.empty()) ImGui::Text("%zu blocks outside recorded segments", d.loose.size());
  }
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("live", ImVec2(0, 0), true);
  if (!kept.empty()) {
    // A whole PyTorch stack runs to dozens of frames: it scrolls in its own pane.
    ImGui::BeginChild("kept", ImVec2(0, ImGui::GetContentRegionAvail().y * 0.45f), false, ImGuiWindowFlags_HorizontalScrollbar);
    ImGui::TextUnformatted(kept.c_str());
    ImGui::EndChild();
    if (ImGui::SmallButton("clear")) kept.clear();
    ImGui::Separator();
  }
  if (table_time != m.time_ns || table_generation != v.generation) {  // the live table, by site and category
    table_time = m.time_ns, table_generation = v.generation;
    live.columns = {"site", "category", "bytes", "blocks"};
    live.numeric = {false, false, true, true};
    live.rows.clear();
    std::map<std::pair<analysis::SiteId, int>, std::pair<std::uint64_t, std::uint64_t>> groups;
    for (const auto& d : m.devices)
      for (const auto& seg : d.segments)
        for (const auto& b : seg.blocks) {
          auto& g = groups[{b.site, static_cast<int>(b.category)}];
          g.first += b.size, ++g.second;
        }
    for (auto& [k, g] : groups) {
      const auto& site = m.sites[k.first];
      live.rows.push_back({{site.location.empty() ? "<unknown>" : site.location,
                            std::string(profiler::category_name(static_cast<analysis::Category>(k.second))), bytes_text(g.first),
                            std::to_string(g.second)},
                           {0, 0, static_cast<double>(g.first), static_cast<double>(g.second)},
                           0,
                           site.location});
    }
  }
  ImGui::TextUnformatted("live at the cursor");
  if (const TableRow* row = draw_table("live", live, 0)) v.source = row->location;
  ImGui::EndChild();
}

}  // namespace memlens::viewer
