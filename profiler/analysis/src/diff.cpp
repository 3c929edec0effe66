#include "memlens/analysis/diff.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

#include "memlens/analysis/report_layout.hpp"
#include "memlens/common/byte_text.hpp"

namespace memlens::analysis {

namespace {

std::string bytes(std::int64_t b) { return format_bytes(b); }
std::string signed_bytes(std::int64_t b) { return (b > 0 ? "+" : "") + format_bytes(b); }

using Rows = std::map<std::string, DeltaRow>;

void put(Rows& rows, const std::string& key, std::uint64_t v, bool second) {
  DeltaRow& r = rows[key];
  r.key = key;
  (second ? r.b : r.a) += v;
}

std::vector<DeltaRow> sorted(const Rows& rows, bool changed_only) {
  std::vector<DeltaRow> out;
  for (const auto& [k, r] : rows)
    if (!changed_only || r.delta() != 0) out.push_back(r);
  std::stable_sort(out.begin(), out.end(),
                   [](const DeltaRow& x, const DeltaRow& y) { return std::abs(x.delta()) > std::abs(y.delta()); });
  return out;
}

Table delta_table(const std::string& what, const std::vector<DeltaRow>& rows, bool as_bytes) {
  Table t{{what, "A", "B", "change"}, {false, true, true, true}, 0, {}};
  for (const auto& r : rows) {
    auto a = static_cast<std::int64_t>(r.a), b = static_cast<std::int64_t>(r.b);
    Row row = as_bytes ? Row{r.key, bytes(a), bytes(b), signed_bytes(r.delta())}
                       : Row{r.key, std::to_string(a), std::to_string(b), (r.delta() > 0 ? "+" : "") + std::to_string(r.delta())};
    // A site's key is its location: the viewer shows its source.
    t.rows.push_back(
        std::move(row).with({0, static_cast<double>(a), static_cast<double>(b), static_cast<double>(r.delta())}, 0, r.key));
  }
  return t;
}

}  // namespace

std::string stack_key(const Report& r, const StackBytes& s) {
  std::vector<std::string> frames;
  for (const auto& f : r.stack(s.stack).frames) {
    if (f.language != "python" || f.location.empty()) continue;
    auto slash = f.location.rfind('/');
    frames.push_back(slash == std::string::npos ? f.location : f.location.substr(slash + 1));
    if (frames.size() == 6) break;  // deep enough to tell call paths apart
  }
  if (frames.empty()) return site_text(r.site(s.site), "");
  std::string key;
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) key += (key.empty() ? "" : " > ") + *it;
  return key;
}

ReportDiff diff_reports(const Report& a, const Report& b) {
  ReportDiff d;
  d.a_path = a.path, d.b_path = b.path;
  Rows peak, reserved, cats, sites, stacks, findings;
  for (int side = 0; side < 2; ++side) {
    const Report& r = side ? b : a;
    for (const auto& dev : r.devices) {
      put(peak, dev.name, dev.peak_allocated.allocated, side);
      put(reserved, dev.name, dev.peak_reserved.reserved, side);
    }
    if (const DeviceReport* m = r.main_device()) {
      for (const auto& c : m->peak_allocated.by_category)
        put(cats, std::string(profiler::category_name(c.category)), c.bytes, side);
      for (const auto& s : m->peak_allocated.by_stack) put(stacks, stack_key(r, s), s.bytes, side);
    }
    for (const auto& s : r.allocations_by_site) put(sites, site_text(r.site(s.site), ""), s.bytes, side);
    for (const auto& f : r.findings) put(findings, std::string(finding_kind_name(f.kind)), 1, side);
  }
  d.peak_allocated = sorted(peak, false);
  d.peak_reserved = sorted(reserved, false);
  d.categories = sorted(cats, false);
  d.sites = sorted(sites, true);
  d.stacks = sorted(stacks, true);
  for (const auto& [k, r] : sites) {
    if (r.a == 0 && r.b > 0) d.new_sites.push_back(k);
    if (r.a > 0 && r.b == 0) d.vanished_sites.push_back(k);
  }
  d.findings = sorted(findings, false);
  return d;
}

std::string render_diff(const ReportDiff& d, const std::string& format, const RenderOptions& o) {
  if (format == "json") {
    auto rows = [](const std::vector<DeltaRow>& v) {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& r : v) j.push_back({{"key", r.key}, {"a", r.a}, {"b", r.b}, {"delta", r.delta()}});
      return j;
    };
    nlohmann::json j = {{"schema_version", kReportSchemaVersion},
                        {"a", d.a_path},
                        {"b", d.b_path},
                        {"peak_allocated", rows(d.peak_allocated)},
                        {"peak_reserved", rows(d.peak_reserved)},
                        {"categories_at_peak", rows(d.categories)},
                        {"sites", rows(d.sites)},
                        {"stacks_at_peak", rows(d.stacks)},
                        {"new_sites", d.new_sites},
                        {"vanished_sites", d.vanished_sites},
                        {"findings", rows(d.findings)}};
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  std::vector<Block> blocks = layout_diff(d, o);
  return format == "markdown" ? render_markdown(blocks, "memlens diff") : render_text(blocks, o);
}

std::vector<Block> layout_diff(const ReportDiff& d, const RenderOptions& o) {
  auto shown = [&](const std::string& s) { return site_text(SiteRef{s, ""}, o.base_dir); };
  std::vector<Block> blocks;
  Block peaks{2, "peaks", {{"A: " + d.a_path, {}, false}, {"B: " + d.b_path, {}, false}}};
  peaks.parts.push_back({"", delta_table("peak allocated", d.peak_allocated, true), false});
  peaks.parts.push_back({"", delta_table("peak reserved", d.peak_reserved, true), false});
  blocks.push_back(std::move(peaks));
  Block cats{2, "categories at peak", {{"", delta_table("category", d.categories, true), false}}};
  blocks.push_back(std::move(cats));
  Block sites{2, "sites", {}};
  if (d.sites.empty()) sites.parts.push_back({"every site allocated the same bytes", {}, false});
  else {
    std::vector<DeltaRow> rows = d.sites;
    for (auto& r : rows) r.key = shown(r.key);
    sites.parts.push_back({"", delta_table("bytes allocated at", rows, true), false});
  }
  for (const auto& s : d.new_sites) sites.parts.push_back({"new in B: " + shown(s), {}, true});
  for (const auto& s : d.vanished_sites) sites.parts.push_back({"gone from B: " + shown(s), {}, false});
  blocks.push_back(std::move(sites));
  if (!d.stacks.empty()) {
    // Stacks come from PyTorch snapshots and --stacks recordings; others have none.
    std::vector<DeltaRow> rows = d.stacks;
    for (auto& r : rows) r.key = shown(r.key);
    blocks.push_back(
        {2, "stacks at peak", {{"", delta_table("live at the peak under (Python frames, innermost last)", rows, true), false}}});
  }
  Block findings{2, "findings", {}};
  if (d.findings.empty()) findings.parts.push_back({"no findings in either trace", {}, false});
  else findings.parts.push_back({"", delta_table("finding", d.findings, false), false});
  blocks.push_back(std::move(findings));
  return blocks;
}

}  // namespace memlens::analysis
