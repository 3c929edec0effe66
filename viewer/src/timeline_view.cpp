// The timeline: allocated memory per device stacked by category, reserved as a line,
// step boundaries as alternating bands, scopes as bars along the top, OOMs as red marks,
// and the cursor. Wheel zooms around the mouse, drag pans, a click moves the cursor. It
// draws the report's buckets (at most 512 per device), so a trace of 10 M events costs
// what one of 1,000 does.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "panels.hpp"

namespace memlens::viewer {

namespace {

constexpr analysis::Category kStack[] = {analysis::Category::Parameter, analysis::Category::Gradient,
                                         analysis::Category::OptimizerState, analysis::Category::Activation,
                                         analysis::Category::Temporary, analysis::Category::Input,
                                         analysis::Category::Unknown};

// "file.cpp:31" for a site, "<unknown>" for none.
std::string short_site(const analysis::Report& r, analysis::SiteId id) {
  const std::string& loc = r.site(id).location;
  if (loc.empty()) return "<unknown>";
  auto slash = loc.rfind('/');
  return slash == std::string::npos ? loc : loc.substr(slash + 1);
}

ImU32 name_color(const std::string& name) {
  std::uint32_t h = 2166136261u;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  return IM_COL32(80 + h % 150, 80 + (h >> 8) % 150, 80 + (h >> 16) % 150, 200);
}

}  // namespace

ImU32 category_color(analysis::Category c) {
  switch (c) {
    case analysis::Category::Parameter: return IM_COL32(66, 133, 244, 255);
    case analysis::Category::Gradient: return IM_COL32(251, 188, 5, 255);
    case analysis::Category::OptimizerState: return IM_COL32(171, 71, 188, 255);
    case analysis::Category::Activation: return IM_COL32(52, 168, 83, 255);
    case analysis::Category::Temporary: return IM_COL32(0, 172, 193, 255);
    case analysis::Category::Input: return IM_COL32(255, 112, 67, 255);
    case analysis::Category::Unknown: return IM_COL32(158, 158, 158, 255);
  }
  return IM_COL32(158, 158, 158, 255);
}

void draw_timeline(const analysis::Report& r, ViewState& v, float height) {
  const double duration = std::max<double>(1.0, static_cast<double>(r.duration_ns));
  if (v.fit || v.end_ns <= v.begin_ns) v.begin_ns = 0, v.end_ns = duration, v.fit = false;

  // Legend: categories, or the top sites (of the first device's series) and the rest.
  auto legend = [](const std::string& name, ImU32 colour) {
    ImGui::ColorButton(name.c_str(), ImGui::ColorConvertU32ToFloat4(colour), ImGuiColorEditFlags_NoTooltip, ImVec2(12, 12));
    ImGui::SameLine();
    ImGui::TextUnformatted(name.c_str());
    ImGui::SameLine();
  };
  ImGui::Checkbox("by site", &v.by_site);
  ImGui::SameLine();
  if (v.by_site) {
    const analysis::TimelineSeries* main = nullptr;
    for (const auto& ts : r.timeline.series)
      if (const auto* d = r.main_device(); d && ts.device == d->index) main = &ts;
    if (main)
      for (auto site : main->top_sites) legend(short_site(r, site), name_color(r.site(site).location));
    legend("other", category_color(analysis::Category::Unknown));
  } else {
    for (auto c : kStack) legend(std::string(profiler::category_name(c)), category_color(c));
  }
  if (ImGui::SmallButton("fit")) v.begin_ns = 0, v.end_ns = duration;
  ImGui::SameLine();
  if (ImGui::SmallButton("peak"))
    if (const auto* d = r.main_device()) v.cursor_ns = d->peak_allocated.time_ns;
  ImGui::SameLine();
  ImGui::Text("cursor %.6f s", static_cast<double>(v.cursor_ns) / 1e9);

  const int devices = std::max<int>(1, static_cast<int>(r.timeline.series.size()));
  const float band = 14;
  ImVec2 origin = ImGui::GetCursorScreenPos();
  ImVec2 size(std::max(100.0f, ImGui::GetContentRegionAvail().x), std::max(60.0f, height));
  ImGui::InvisibleButton("timeline", size);
  bool hovered = ImGui::IsItemHovered();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRectFilled(origin, ImVec2(origin.x + size.x, origin.y + size.y), IM_COL32(24, 24, 28, 255));

  auto x_of = [&](double t) { return origin.x + static_cast<float>((t - v.begin_ns) / (v.end_ns - v.begin_ns)) * size.x; };
  auto t_of = [&](float x) { return v.begin_ns + (x - origin.x) / size.x * (v.end_ns - v.begin_ns); };

  // Input: zoom around the mouse, pan by dragging, click to move the cursor.
  ImGuiIO& io = ImGui::GetIO();
  if (hovered && io.MouseWheel != 0) {
    double at = t_of(io.MousePos.x), k = io.MouseWheel > 0 ? 0.8 : 1.25;
    v.begin_ns = at - (at - v.begin_ns) * k;
    v.end_ns = at + (v.end_ns - at) * k;
  }
  if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left)) {
    double dt = -io.MouseDelta.x / size.x * (v.end_ns - v.begin_ns);
    v.begin_ns += dt, v.end_ns += dt;
  } else if (ImGui::IsItemDeactivated() && std::abs(ImGui::GetMouseDragDelta(ImGuiMouseButton_Left).x) < 3) {
    v.cursor_ns = static_cast<std::uint64_t>(std::clamp(t_of(io.MousePos.x), 0.0, duration));
  }
  dl->PushClipRect(origin, ImVec2(origin.x + size.x, origin.y + size.y), true);

  // Step boundaries: alternate shading between the visible ones, while they are at least
  // a few pixels apart (200,000 steps on one screen would be noise, and slow).
  const auto& steps = r.timeline.step_times_ns;
  auto first_step = std::lower_bound(steps.begin(), steps.end(), static_cast<std::uint64_t>(std::max(0.0, v.begin_ns)));
  auto last_step = std::upper_bound(first_step, steps.end(), static_cast<std::uint64_t>(std::max(0.0, v.end_ns)));
  if ((last_step - first_step) * 4 < static_cast<std::ptrdiff_t>(size.x)) {
    auto from = static_cast<std::size_t>(first_step - steps.begin()) & ~std::size_t{1};
    for (std::size_t i = from + 1; i < steps.size() && steps[i - 1] <= v.end_ns; i += 2)
      dl->AddRectFilled(ImVec2(x_of(static_cast<double>(steps[i - 1])), origin.y),
                        ImVec2(x_of(static_cast<double>(steps[i])), origin.y + size.y), IM_COL32(255, 255, 255, 14));
  }
  // Scopes along the top, one row per thread; those under a pixel wide are left out. They
  // are in trace order, which is begin order per thread: the search starts a view early.
  const auto& scopes = r.timeline.scopes;
  auto first_scope = std::lower_bound(scopes.begin(), scopes.end(), v.begin_ns - (v.end_ns - v.begin_ns),
                                      [](const analysis::ScopeSpan& s, double t) { return static_cast<double>(s.begin_ns) < t; });
  for (auto it = first_scope; it != scopes.end() && static_cast<double>(it->begin_ns) <= v.end_ns; ++it) {
    const auto& s = *it;
    float y = origin.y + 2 + static_cast<float>(s.thread % 3) * band;
    ImVec2 a(x_of(static_cast<double>(s.begin_ns)), y), b(x_of(static_cast<double>(s.end_ns)), y + band - 2);
    if (b.x < origin.x || b.x - a.x < 1) continue;
    dl->AddRectFilled(a, b, name_color(s.name));
    if (b.x - a.x > 40) dl->AddText(ImVec2(a.x + 2, a.y - 1), IM_COL32(0, 0, 0, 255), s.name.c_str());
  }

  // One lane per device; allocated stacked by category, reserved as a line above.
  float top = origin.y + band * 3, lane = (size.y - band * 3) / static_cast<float>(devices);
  for (std::size_t d = 0; d < r.timeline.series.size(); ++d) {
    const auto& ts = r.timeline.series[d];
    std::uint64_t max = 1;
    for (const auto& b : ts.buckets) max = std::max({max, b.reserved_max, b.allocated_max});
    float y0 = top + lane * static_cast<float>(d + 1) - 4, h = lane - 18;
    auto y_of = [&](double bytes) { return y0 - static_cast<float>(bytes / static_cast<double>(max)) * h; };
    for (std::size_t i = 0; i < ts.buckets.size(); ++i) {
      const auto& b = ts.buckets[i];
      float xa = x_of(static_cast<double>(b.time_ns)), xb = std::max(xa + 1, x_of(static_cast<double>(b.time_ns + ts.bucket_ns)));
      if (xb < origin.x || xa > origin.x + size.x) continue;
      double below = 0;
      auto stack = [&](double bytes, ImU32 colour) {
        if (bytes <= 0) return;
        dl->AddRectFilled(ImVec2(xa, y_of(below + bytes)), ImVec2(xb, y_of(below)), colour);
        below += bytes;
      };
      if (v.by_site) {
        for (std::size_t k = 0; k < ts.top_sites.size(); ++k)
          stack(static_cast<double>(b.site_last[k]), name_color(r.site(ts.top_sites[k]).location));
        stack(static_cast<double>(b.allocated_last) - below, category_color(analysis::Category::Unknown));
      } else {
        for (auto c : kStack) stack(static_cast<double>(b.category_last[static_cast<std::size_t>(c)]), category_color(c));
      }
      // The bucket's high-water mark, when it rose above its final value.
      if (static_cast<double>(b.allocated_max) > below)
        dl->AddLine(ImVec2(xa, y_of(static_cast<double>(b.allocated_max))), ImVec2(xb, y_of(static_cast<double>(b.allocated_max))),
                    IM_COL32(220, 220, 220, 160));
      dl->AddLine(ImVec2(xa, y_of(static_cast<double>(b.reserved_max))), ImVec2(xb, y_of(static_cast<double>(b.reserved_max))),
                  IM_COL32(255, 80, 80, 255), 1.5f);
    }
    std::string name;
    for (const auto& dev : r.devices)
      if (dev.index == ts.device) name = dev.name;
    std::string label = name + "  max " + analysis::bytes_text(max) + " (red: reserved)";
    dl->AddText(ImVec2(origin.x + 4, y0 - h - 14), IM_COL32(230, 230, 230, 255), label.c_str());
  }
  // OOMs, then the cursor.
  for (const auto& o : r.fragmentation.ooms) {
    float x = x_of(static_cast<double>(o.time_ns));
    dl->AddTriangleFilled(ImVec2(x - 6, origin.y + size.y - 2), ImVec2(x + 6, origin.y + size.y - 2), ImVec2(x, origin.y + size.y - 14),
                          IM_COL32(255, 0, 0, 255));
  }
  float cx = x_of(static_cast<double>(v.cursor_ns));
  dl->AddLine(ImVec2(cx, origin.y), ImVec2(cx, origin.y + size.y), IM_COL32(255, 255, 0, 255), 2);
  dl->PopClipRect();

  if (hovered) {
    double t = t_of(io.MousePos.x);
    ImGui::SetTooltip("%.6f s (wheel: zoom, drag: pan, click: cursor)", t / 1e9);
  }
}

}  // namespace memlens::viewer
