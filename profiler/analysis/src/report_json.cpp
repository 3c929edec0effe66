// The JSON report (docs/report-schema.md): every section of every trace, sites written
// out as "file:line" so a consumer needs no table.
#include <nlohmann/json.hpp>

#include <algorithm>

#include "memlens/analysis/render.hpp"

namespace memlens::analysis {

namespace {

using nlohmann::json;

json shape_json(const ShapeRecord& s) { return json(std::vector<std::int64_t>(s.dims.begin(), s.dims.begin() + s.ndim)); }

class JsonReport {
 public:
  JsonReport(const Report& r, const RenderOptions& o) : r_(r), o_(o) {}

  json site(SiteId id) const { return r_.site(id).location.empty() ? json(nullptr) : json(r_.site(id).location); }

  json live_at(const LiveAt& a) const {
    json cats = json::array(), sites = json::array();
    for (const auto& c : a.by_category)
      cats.push_back({{"category", profiler::category_name(c.category)}, {"bytes", c.bytes}, {"blocks", c.blocks}});
    for (const auto& s : a.by_site)
      sites.push_back({{"site", site(s.site)}, {"function", r_.site(s.site).function}, {"bytes", s.bytes}, {"blocks", s.blocks}});
    json stacks = json::array();
    for (const auto& s : a.by_stack) {
      json frames = json::array();
      for (const auto& f : r_.stack(s.stack).frames)
        frames.push_back({{"location", f.location}, {"function", f.function}, {"language", f.language}});
      stacks.push_back({{"site", site(s.site)}, {"bytes", s.bytes}, {"blocks", s.blocks}, {"frames", frames}});
    }
    return {{"time_ns", a.time_ns},   {"allocated", a.allocated},
            {"reserved", a.reserved}, {"largest_free_block", a.largest_free_block},
            {"by_category", cats},    {"by_site", sites},
            {"by_stack", stacks}};
  }

  json device_name(std::uint8_t index) const {
    for (const auto& d : r_.devices)
      if (d.index == index) return d.name;
    return "device " + std::to_string(index);
  }

  json build() const {
    json t = {{"path", r_.path},
              {"program", r_.program},
              {"pid", r_.pid},
              {"complete", r_.problem.empty()},
              {"problem", r_.problem},
              {"notes", r_.notes},
              {"sites_note", r_.sites_note},
              {"events", r_.events},
              {"duration_ns", r_.duration_ns},
              {"steps", r_.steps}};
    json devices = json::array();
    for (const auto& d : r_.devices)
      devices.push_back({{"name", d.name},
                         {"capacity", d.capacity},
                         {"allocs", d.allocs},
                         {"frees", d.frees},
                         {"segment_allocs", d.segment_allocs},
                         {"segment_frees", d.segment_frees},
                         {"ooms", d.ooms},
                         {"allocated_total", d.allocated_total},
                         {"final_allocated", d.final_allocated},
                         {"final_reserved", d.final_reserved},
                         {"peak_allocated", live_at(d.peak_allocated)},
                         {"peak_reserved", live_at(d.peak_reserved)}});
    t["devices"] = devices;
    json by_site = json::array();
    for (const auto& s : r_.allocations_by_site)
      by_site.push_back(
          {{"site", site(s.site)}, {"function", r_.site(s.site).function}, {"bytes", s.bytes}, {"blocks", s.blocks}});
    t["allocations_by_site"] = by_site;
    json findings = json::array();
    for (const auto& f : r_.findings)
      if (o_.sections.size() == 1 || wanted(section_of(f.kind)))  // alone, a section lists every finding
        findings.push_back({{"kind", finding_kind_name(f.kind)},
                            {"site", site(f.site)},
                            {"function", r_.site(f.site).function},
                            {"bytes", f.bytes},
                            {"message", f.message},
                            {"advice", f.advice},
                            {"saves", f.saves}});
    t["findings"] = findings;
    for (Section s : o_.sections) {
      switch (s) {
        case Section::Summary:
          break;
        case Section::Peak:
          break;  // the devices' peaks above
        case Section::Leaks:
          t["leaks"] = leaks();
          break;
        case Section::Broadcast:
          t["broadcast"] = broadcast();
          break;
        case Section::Contiguity:
          t["contiguity"] = contiguity();
          break;
        case Section::Transfers:
          t["transfers"] = transfers();
          break;
        case Section::Churn:
          t["churn"] = churn();
          break;
        case Section::Fragmentation:
          t["fragmentation"] = fragmentation();
          break;
        case Section::Timeline:
          t["timeline"] = timeline();
          break;
      }
    }
    return t;
  }

 private:
  bool wanted(Section s) const { return std::find(o_.sections.begin(), o_.sections.end(), s) != o_.sections.end(); }

  json leaks() const {
    const LeakSection& l = r_.leaks;
    json alive = json::array(), growth = json::array();
    for (const auto& g : l.alive_at_end)
      alive.push_back(
          {{"site", site(g.site)}, {"category", profiler::category_name(g.category)}, {"bytes", g.bytes}, {"blocks", g.blocks}});
    for (const auto& g : l.growth)
      growth.push_back({{"site", site(g.site)},
                        {"bytes_per_step", g.bytes_per_step},
                        {"steps_observed", g.steps_observed},
                        {"first_bytes", g.first_bytes},
                        {"last_bytes", g.last_bytes}});
    return {{"leaked_bytes", l.leaked_bytes},
            {"leaked_blocks", l.leaked_blocks},
            {"expected_bytes", l.expected_bytes},
            {"alive_at_end", alive},
            {"growth", growth}};
  }

  json broadcast() const {
    const BroadcastSection& b = r_.broadcast;
    json f = json::array(), m = json::array();
    for (const auto& x : b.findings) {
      json in = json::array();
      for (const auto& s : x.inputs) in.push_back(shape_json(s));
      f.push_back({{"site", site(x.site)},
                   {"op", x.op},
                   {"inputs", in},
                   {"output", shape_json(x.output)},
                   {"factor", x.factor},
                   {"bytes", x.bytes},
                   {"count", x.count}});
    }
    for (const auto& x : b.materialized)
      m.push_back({{"site", site(x.site)}, {"bytes", x.bytes}, {"source_bytes", x.source_bytes}, {"count", x.count}});
    return {{"threshold", b.threshold},
            {"floor_bytes", b.floor_bytes},
            {"broadcast_ops", b.broadcast_ops},
            {"findings", f},
            {"materialized", m}};
  }

  json contiguity() const {
    json c = json::array();
    for (const auto& x : r_.contiguity.copies)
      c.push_back({{"site", site(x.site)},
                   {"reason", profiler::copy_reason_name(x.reason)},
                   {"count", x.count},
                   {"bytes", x.bytes},
                   {"view_chain", x.view_chain},
                   {"steps", x.steps},
                   {"repeated", x.repeated}});
    return {{"count", r_.contiguity.count}, {"bytes", r_.contiguity.bytes}, {"copies", c}};
  }

  json transfers() const {
    const TransferSection& t = r_.transfers;
    json sites = json::array(), steps = json::array(), resent = json::array();
    for (const auto& x : t.sites)
      sites.push_back(
          {{"site", site(x.site)}, {"from", x.from}, {"to", x.to}, {"count", x.count}, {"bytes", x.bytes}, {"steps", x.steps}});
    for (const auto& x : t.per_step) steps.push_back({{"step", x.step}, {"count", x.count}, {"bytes", x.bytes}});
    for (const auto& x : t.resent)
      resent.push_back({{"site", site(x.site)},
                        {"to", device_name(x.to)},
                        {"bytes", x.bytes},
                        {"sources", x.sources},
                        {"times", x.times},
                        {"steps", x.steps}});
    return {{"count", t.count}, {"bytes", t.bytes}, {"sites", sites}, {"per_step", steps}, {"resent", resent}};
  }

  json churn() const {
    const ChurnSection& c = r_.churn;
    json f = json::array(), t = json::array();
    for (const auto& x : c.findings)
      f.push_back({{"site", site(x.site)}, {"size", x.size}, {"allocs", x.allocs}, {"steps", x.steps}, {"constant", x.constant}});
    for (const auto& x : c.temporaries) t.push_back({{"site", site(x.site)}, {"count", x.count}, {"bytes", x.bytes}});
    return {{"window_events", c.window_events},
            {"findings", f},
            {"temporaries", t},
            {"temporary_count", c.temporary_count},
            {"temporary_bytes", c.temporary_bytes}};
  }

  static json replay_json(const std::vector<OomReplay>& v) {
    json out = json::array();
    for (const auto& x : v) out.push_back({{"config", x.config}, {"fits", x.fits}});
    return out;
  }

  json fragmentation() const {
    json p = json::array(), o = json::array();
    for (const auto& x : r_.fragmentation.points)
      p.push_back({{"device", device_name(x.device)},
                   {"when", x.when},
                   {"time_ns", x.time_ns},
                   {"reserved", x.reserved},
                   {"allocated", x.allocated},
                   {"largest_free_block", x.largest_free_block},
                   {"reserved_over_allocated", x.reserved_over_allocated}});
    for (const auto& x : r_.fragmentation.ooms)
      o.push_back({{"device", device_name(x.device)},
                   {"time_ns", x.time_ns},
                   {"requested", x.requested},
                   {"device_free", x.device_free},
                   {"reserved", x.reserved},
                   {"allocated", x.allocated},
                   {"largest_free_block", x.largest_free_block},
                   {"site", site(x.site)},
                   {"reserved_unallocated", x.reserved - std::min(x.reserved, x.allocated)},
                   {"holding", live_at(x.holding)},
                   {"replay_capacity", x.replay_capacity},
                   {"replay", replay_json(x.replay)}});
    return {{"points", p}, {"ooms", o}};
  }

  json timeline() const {
    // Allocated per category at each bucket's end, after the totals: "parameter_last", ...
    json columns = {"time_ns", "allocated_min", "allocated_max", "reserved_max", "allocated_last", "reserved_last"};
    for (std::size_t c = 0; c < kCategoryCount; ++c)
      columns.push_back(std::string(profiler::category_name(static_cast<Category>(c))) + "_last");
    json series = json::array();
    for (const auto& s : r_.timeline.series) {
      json b = json::array();
      for (const auto& k : s.buckets) {
        json row = {k.time_ns, k.allocated_min, k.allocated_max, k.reserved_max, k.allocated_last, k.reserved_last};
        for (std::size_t c = 0; c < kCategoryCount; ++c) row.push_back(k.category_last[c]);
        b.push_back(std::move(row));
      }
      series.push_back({{"device", device_name(s.device)}, {"bucket_ns", s.bucket_ns}, {"columns", columns}, {"buckets", b}});
    }
    // Scopes in trace order, the first kMaxScopes of them (an HTML page stays small).
    constexpr std::size_t kMaxScopes = 50000;
    json scopes = json::array();
    for (std::size_t i = 0; i < r_.timeline.scopes.size() && i < kMaxScopes; ++i) {
      const auto& s = r_.timeline.scopes[i];
      scopes.push_back({{"name", s.name}, {"thread", s.thread}, {"begin_ns", s.begin_ns}, {"end_ns", s.end_ns}});
    }
    return {{"series", series},
            {"step_times_ns", r_.timeline.step_times_ns},
            {"scopes", scopes},
            {"scopes_total", r_.timeline.scopes.size()}};
  }

  const Report& r_;
  const RenderOptions& o_;
};

}  // namespace

std::string render_json(const std::vector<Report>& reports, const RenderOptions& options) {
  json traces = json::array();
  for (const Report& r : reports) traces.push_back(JsonReport(r, options).build());
  json sections = json::array();
  for (Section s : options.sections) sections.push_back(section_name(s));
  json doc = {{"schema_version", kReportSchemaVersion}, {"tool", "memlens"}, {"sections", sections}, {"traces", traces}};
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace memlens::analysis
