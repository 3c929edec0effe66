// The timeline: allocated memory per device stacked by category, reserved as a line,
// step boundaries as alternating bands, scopes as bars along the top, OOMs as red marks,
// the cursor, a time axis along the bottom and a bytes axis per device, and the values
// under the mouse. Wheel zooms around the mouse, drag pans, a click moves the cursor. It
// draws the report's buckets (at most 512 per device), so a trace of 10 M events costs
// what one of 1,000 does.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "panels.hpp"

namespace memlens::viewer {

namespace {

constexpr analysis::Category kStack[] = {
    analysis::Category::Parameter,  analysis::Category::Gradient,        analysis::Category::OptimizerState,
    analysis::Category::Activation, analysis::Category::AutogradDetail,  analysis::Category::Temporary,
    analysis::Category::Input,      analysis::Category::BeforeRecording, analysis::Category::Unknown};

// "file.cpp:31" for a site, "<unknown>" for none.
std::string short_site(const analysis::Report& r, analysis::SiteId id) {
  const std::string& loc = r.site(id).location;
  if (loc.empty()) return "<unknown>";
  auto slash = loc.rfind('/');
  return slash == std::string::npos ? loc : loc.substr(slash + 1);
}

// The smallest 1, 2 or 5 times a power of ten that is at least `raw`.
double nice_step(double raw) {
  double p = std::pow(10.0, std::floor(std::log10(std::max(raw, 1e-12))));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

// A tick's time in the unit its step is written in: "250 ms", "1.5 s", "40 µs".
std::string time_label(double ns, double step) {
  const char* unit = "ns";
  double div = 1;
  if (step >= 1e8) unit = "s", div = 1e9;
  else if (step >= 1e5) unit = "ms", div = 1e6;
  else if (step >= 1e2) unit = "\xc2\xb5s", div = 1e3;
  double v = ns / div, s = step / div;
  char buf[48];
  std::snprintf(buf, sizeof buf, s < 1 ? "%.1f %s" : "%.0f %s", v, unit);
  return buf;
}

// Gridlines and labels of a bytes axis up to `max`, in KiB, MiB or GiB steps of 1, 2 or 5.
std::vector<double> byte_ticks(double max) {
  double unit = max >= (1u << 30) ? double(1u << 30) : max >= (1u << 20) ? double(1u << 20) : max >= 1024 ? 1024.0 : 1.0;
  double step = nice_step(max / unit / 4) * unit;
  std::vector<double> out;
  for (double t = step; t <= max; t += step) out.push_back(t);
  return out;
}

constexpr ImU32 kAxisText = IM_COL32(200, 200, 120, 255);  // the viewer tests find the axes by it
constexpr ImU32 kGrid = IM_COL32(255, 255, 255, 28);

ImU32 name_color(const std::string& name) {
  std::uint32_t h = 2166136261u;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  return IM_COL32(80 + h % 150, 80 + (h >> 8) % 150, 80 + (h >> 16) % 150, 200);
}

}  // namespace

ImU32 category_color(analysis::Category c) {
  switch (c) {
    case analysis::Category::Parameter:
      return IM_COL32(66, 133, 244, 255);
    case analysis::Category::Gradient:
      return IM_COL32(251, 188, 5, 255);
    case analysis::Category::OptimizerState:
      return IM_COL32(171, 71, 188, 255);
    case analysis::Category::Activation:
      return IM_COL32(52, 168, 83, 255);
    case analysis::Category::Temporary:
      return IM_COL32(0, 172, 193, 255);
    case analysis::Category::AutogradDetail:
      return IM_COL32(141, 110, 99, 255);
    case analysis::Category::Input:
      return IM_COL32(255, 112, 67, 255);
    case analysis::Category::BeforeRecording:
      return IM_COL32(96, 125, 139, 255);
    case analysis::Category::Unknown:
      return IM_COL32(158, 158, 158, 255);
  }
  return IM_COL32(158, 158, 158, 255);
}

void draw_timeline(const analysis::Report& r, ViewState& v, float height) {
  const double duration = std::max<double>(1.0, static_cast<double>(r.duration_ns));
  if (v.fit || v.end_ns <= v.begin_ns) v.begin_ns = 0, v.end_ns = duration, v.fit = false;
  if (v.live && v.follow_newest) v.begin_ns = 0, v.end_ns = duration, v.cursor_ns = r.duration_ns;

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
    if (const auto* d = r.main_device()) v.cursor_ns = d->peak_allocated.time_ns, v.follow_newest = false;
  ImGui::SameLine();
  if (v.live) {
    ImGui::Checkbox("newest", &v.follow_newest);  // keep the cursor at the newest time
    ImGui::SameLine();
  }
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
    v.follow_newest = false;
    double at = t_of(io.MousePos.x), k = io.MouseWheel > 0 ? 0.8 : 1.25;
    v.begin_ns = at - (at - v.begin_ns) * k;
    v.end_ns = at + (v.end_ns - at) * k;
  }
  if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left)) {
    double dt = -io.MouseDelta.x / size.x * (v.end_ns - v.begin_ns);
    v.begin_ns += dt, v.end_ns += dt;
    v.follow_newest = false;
  } else if (ImGui::IsItemDeactivated() && std::abs(ImGui::GetMouseDragDelta(ImGuiMouseButton_Left).x) < 3) {
    v.follow_newest = false;
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

  // The time axis: ticks at 1, 2 or 5 times a power of ten, about every 120 pixels.
  const float axis = 16;
  {
    double step = nice_step((v.end_ns - v.begin_ns) * 120 / size.x);
    float base = origin.y + size.y - axis;
    dl->AddLine(ImVec2(origin.x, base), ImVec2(origin.x + size.x, base), IM_COL32(120, 120, 120, 255));
    for (double t = std::ceil(v.begin_ns / step) * step; t <= v.end_ns; t += step) {
      float x = x_of(t);
      dl->AddLine(ImVec2(x, origin.y + band * 3), ImVec2(x, base), kGrid);
      dl->AddLine(ImVec2(x, base), ImVec2(x, base + 4), IM_COL32(160, 160, 160, 255));
      dl->AddText(ImVec2(x + 3, base + 1), kAxisText, time_label(t, step).c_str());
    }
  }

  // One lane per device; allocated stacked by category, reserved as a line above.
  float top = origin.y + band * 3, lane = (size.y - band * 3 - axis) / static_cast<float>(devices);
  const analysis::TimelineSeries* under_mouse = nullptr;  // the lane under the mouse
  for (std::size_t d = 0; d < r.timeline.series.size(); ++d) {
    const auto& ts = r.timeline.series[d];
    std::uint64_t max = 1;
    for (const auto& b : ts.buckets) max = std::max({max, b.reserved_max, b.allocated_max});
    float y0 = top + lane * static_cast<float>(d + 1) - 4, h = lane - 18;
    auto y_of = [&](double bytes) { return y0 - static_cast<float>(bytes / static_cast<double>(max)) * h; };
    if (hovered && io.MousePos.y >= y0 - h && io.MousePos.y <= y0) under_mouse = &ts;
    // The bytes axis: gridlines under the data, labels over it at the left.
    const std::vector<double> ticks = byte_ticks(static_cast<double>(max));
    for (double b : ticks) dl->AddLine(ImVec2(origin.x, y_of(b)), ImVec2(origin.x + size.x, y_of(b)), kGrid);
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
        dl->AddLine(ImVec2(xa, y_of(static_cast<double>(b.allocated_max))),
                    ImVec2(xb, y_of(static_cast<double>(b.allocated_max))), IM_COL32(220, 220, 220, 160));
      dl->AddLine(ImVec2(xa, y_of(static_cast<double>(b.reserved_max))), ImVec2(xb, y_of(static_cast<double>(b.reserved_max))),
                  IM_COL32(255, 80, 80, 255), 1.5f);
    }
    std::string name;
    for (const auto& dev : r.devices)
      if (dev.index == ts.device) name = dev.name;
    for (double b : ticks)
      if (y_of(b) - 14 > y0 - h)  // not over the lane's name
        dl->AddText(ImVec2(origin.x + 4, y_of(b) - 14), kAxisText, analysis::bytes_text(static_cast<std::uint64_t>(b)).c_str());
    std::string label = name + "  (red: reserved)";
    dl->AddText(ImVec2(origin.x + 4, y0 - h - 14), IM_COL32(230, 230, 230, 255), label.c_str());
  }
  // OOMs, then the cursor.
  for (const auto& o : r.fragmentation.ooms) {
    float x = x_of(static_cast<double>(o.time_ns));
    dl->AddTriangleFilled(ImVec2(x - 6, origin.y + size.y - 2), ImVec2(x + 6, origin.y + size.y - 2),
                          ImVec2(x, origin.y + size.y - 14), IM_COL32(255, 0, 0, 255));
  }
  float cx = x_of(static_cast<double>(v.cursor_ns));
  dl->AddLine(ImVec2(cx, origin.y), ImVec2(cx, origin.y + size.y), IM_COL32(255, 255, 0, 255), 2);
  dl->PopClipRect();

  if (hovered) {
    // The values under the mouse: the bucket holding that moment, on the lane under it.
    double t = t_of(io.MousePos.x);
    std::string text = time_label(t, 1) + " (" + std::to_string(t / 1e9).substr(0, 10) + " s)";
    static const std::vector<analysis::TimelineBucket> none;
    const auto& buckets = under_mouse ? under_mouse->buckets : none;
    auto after = std::upper_bound(buckets.begin(), buckets.end(), t,
                                  [](double x, const analysis::TimelineBucket& b) { return x < static_cast<double>(b.time_ns); });
    if (under_mouse && after != buckets.begin()) {
      {
        const auto& b = *std::prev(after);
        std::string name;
        for (const auto& dev : r.devices)
          if (dev.index == under_mouse->device) name = dev.name;
        text += "\n" + name + ": " + analysis::bytes_text(b.allocated_last) + " allocated (" +
                analysis::bytes_text(b.allocated_min) + " to " + analysis::bytes_text(b.allocated_max) + " in this " +
                time_label(static_cast<double>(under_mouse->bucket_ns), static_cast<double>(under_mouse->bucket_ns)) + "), " +
                analysis::bytes_text(b.reserved_last) + " reserved";
      }
    }
    ImGui::SetTooltip("%s\n(wheel: zoom, drag: pan, click: cursor)", text.c_str());
  }
}

}  // namespace memlens::viewer
