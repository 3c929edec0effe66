#include "memlens/analysis/check.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>

#include "memlens/analysis/render.hpp"
#include "memlens/common/number_text.hpp"

namespace memlens::analysis {

namespace {

constexpr std::uint64_t kMaxBaselineBytes = std::uint64_t{1} << 62;
constexpr double kMaxTolerance = 100;  // 10000%: more is no gate at all

std::string over(std::uint64_t value, std::uint64_t limit) {
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.1f%%",
                limit ? 100.0 * static_cast<double>(value - limit) / static_cast<double>(limit) : 100.0);
  return bytes_text(value - limit) + " (" + pct + ")";
}

const DeviceReport* pick_device(const Report& r, const std::string& name) {
  if (name.empty()) return r.main_device();
  const DeviceReport* d = r.device(name);
  if (!d) throw CheckError("the trace has no device '" + name + "'");
  return d;
}

std::vector<std::string> top_sites(const Report& r, const LiveAt& at, const std::string& base_dir) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < at.by_site.size() && i < 5; ++i)
    out.push_back(bytes_text(at.by_site[i].bytes) + " at " + site_text(r.site(at.by_site[i].site), base_dir));
  return out;
}

std::vector<std::string> findings_of(const Report& r, Section s, const std::string& base_dir) {
  std::vector<std::string> out;
  for (const Finding& f : r.findings)
    if (section_of(f.kind) == s && f.kind != FindingKind::Oom)
      out.push_back(std::string(finding_kind_name(f.kind)) + " at " + site_text(r.site(f.site), base_dir) + ": " + f.message +
                    "; do: " + f.advice);
  return out;
}

CheckVerdict limit(std::string name, const std::string& what, std::uint64_t value, std::uint64_t max,
                   std::vector<std::string> details) {
  CheckVerdict v{std::move(name), value <= max, "", {}};
  if (v.passed) v.message = what + " is " + bytes_text(value) + ", within the limit of " + bytes_text(max);
  else
    v.message = what + " is " + bytes_text(value) + ", " + over(value, max) + " over the limit of " + bytes_text(max),
    v.details = std::move(details);
  return v;
}

}  // namespace

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

Baseline make_baseline(const Report& r, const std::string& device) {
  const DeviceReport* d = pick_device(r, device);
  Baseline b;
  b.program = r.program;
  b.device = d ? d->name : "";
  b.peak_allocated = d ? d->peak_allocated.allocated : 0;
  b.peak_reserved = d ? d->peak_reserved.reserved : 0;
  b.leaked_bytes = r.leaks.leaked_bytes;
  return b;
}

std::string baseline_json(const Baseline& b) {
  nlohmann::json j = {{"memlens_baseline", 1},
                      {"program", b.program},
                      {"device", b.device},
                      {"peak_allocated", b.peak_allocated},
                      {"peak_reserved", b.peak_reserved},
                      {"leaked_bytes", b.leaked_bytes}};
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Baseline parse_baseline(const std::string& text, const std::string& name) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw CheckError(name + ": not a memlens baseline: not valid JSON");
  try {
    if (!j.is_object() || !j.contains("memlens_baseline"))
      throw CheckError(name + ": not a memlens baseline: no \"memlens_baseline\" key");
    if (j.at("memlens_baseline").get<int>() != 1)
      throw CheckError(name + ": memlens baseline version " + j.at("memlens_baseline").dump() + " is not supported (expected 1)");
    Baseline b;
    b.program = j.value("program", "");
    b.device = j.at("device").get<std::string>();
    // A gate is only as good as its baseline: a figure must be a whole, plausible number of bytes.
    auto bytes = [&](const char* key) {
      const auto& v = j.at(key);
      if (!v.is_number_unsigned() || v.get<std::uint64_t>() > kMaxBaselineBytes)
        throw CheckError(name + ": not a memlens baseline: \"" + key + "\" is " + v.dump() +
                         ", not a whole number of bytes from 0 to 2^62");
      return v.get<std::uint64_t>();
    };
    b.peak_allocated = bytes("peak_allocated");
    b.peak_reserved = bytes("peak_reserved");
    b.leaked_bytes = bytes("leaked_bytes");
    return b;
  } catch (const nlohmann::json::exception& e) {
    throw CheckError(name + ": not a memlens baseline: " + e.what());
  }
}

double parse_tolerance(const std::string& text) {
  try {
    return parse_fraction(text, kMaxTolerance);
  } catch (const NumberError&) {
    throw CheckError("invalid tolerance '" + text + "' (expected e.g. 5% or 0.05, from 0 to 10000%)");
  }
}

std::vector<CheckVerdict> run_checks(const Report& r, const CheckLimits& l, const std::string& base_dir) {
  std::vector<CheckVerdict> out;
  const DeviceReport* d = pick_device(r, l.device.empty() && l.baseline ? l.baseline->device : l.device);
  std::string dev = d ? d->name : "no device";
  std::uint64_t peak = d ? d->peak_allocated.allocated : 0, reserved = d ? d->peak_reserved.reserved : 0;
  LiveAt none;
  const LiveAt& at_peak = d ? d->peak_allocated : none;
  const LiveAt& at_reserved = d ? d->peak_reserved : none;
  auto top = [](const LiveAt& at) { return at.by_site.empty() ? SiteId{0} : at.by_site.front().site; };
  if (l.max_peak) {
    out.push_back(limit("max-peak", "peak allocated on " + dev, peak, *l.max_peak, top_sites(r, at_peak, base_dir)));
    out.back().site = top(at_peak);
  }
  if (l.max_reserved) {
    out.push_back(
        limit("max-reserved", "peak reserved on " + dev, reserved, *l.max_reserved, top_sites(r, at_reserved, base_dir)));
    out.back().site = top(at_reserved);
  }
  for (auto [category, max] : l.max_category) {
    std::uint64_t bytes = 0;
    for (const CategoryBytes& c : at_peak.by_category)
      if (c.category == category) bytes = c.bytes;
    const std::string name(profiler::category_name(category));
    out.push_back(limit("max-category", name + " at the peak on " + dev, bytes, max, top_sites(r, at_peak, base_dir)));
    out.back().site = top(at_peak);
  }
  if (l.max_leaked)
    out.push_back(
        limit("max-leaked", "memory leaked", r.leaks.leaked_bytes, *l.max_leaked, findings_of(r, Section::Leaks, base_dir)));
  if (l.no_leaks) {
    auto found = findings_of(r, Section::Leaks, base_dir);
    CheckVerdict v{"no-leaks", found.empty(), "", {}};
    v.message = found.empty() ? "no leaks and no growing sites"
                              : std::to_string(found.size()) + " leak finding" + (found.size() == 1 ? "" : "s") + ", " +
                                    bytes_text(r.leaks.leaked_bytes) + " alive at the end";
    if (found.empty() && r.ends_mid_run) v.message = "no growing sites (alive at the snapshot is the working set, not a leak)";
    if (!v.passed) v.details = std::move(found);
    out.push_back(std::move(v));
  }
  if (l.no_broadcast) {
    auto found = findings_of(r, Section::Broadcast, base_dir);
    CheckVerdict v{"no-broadcast", found.empty(), "", {}};
    v.message = found.empty() ? "no broadcast blowup"
                              : std::to_string(found.size()) + " broadcast finding" + (found.size() == 1 ? "" : "s");
    if (!v.passed) v.details = std::move(found);
    out.push_back(std::move(v));
  }
  if (l.baseline) {
    const Baseline& b = *l.baseline;
    auto against = [&](std::string name, const std::string& what, std::uint64_t value, std::uint64_t base,
                       std::vector<std::string> details) {
      auto allowed = static_cast<std::uint64_t>(static_cast<double>(base) * (1 + l.tolerance));
      char tol[32];
      std::snprintf(tol, sizeof tol, "%g%%", l.tolerance * 100);
      CheckVerdict v{std::move(name), value <= allowed, "", {}};
      std::string head = what + " is " + bytes_text(value) + " against a baseline of " + bytes_text(base);
      if (v.passed) v.message = head + " (tolerance " + tol + ")";
      else v.message = head + ": " + over(value, base) + " more, beyond the tolerance of " + tol, v.details = std::move(details);
      out.push_back(std::move(v));
    };
    against("baseline-peak", "peak allocated on " + dev, peak, b.peak_allocated, top_sites(r, at_peak, base_dir));
    out.back().site = top(at_peak);
    against("baseline-reserved", "peak reserved on " + dev, reserved, b.peak_reserved, top_sites(r, at_reserved, base_dir));
    out.back().site = top(at_reserved);
    against("baseline-leaked", "memory leaked", r.leaks.leaked_bytes, b.leaked_bytes, findings_of(r, Section::Leaks, base_dir));
  }
  return out;
}

std::string junit_xml(const std::string& suite, const std::vector<CheckVerdict>& verdicts) {
  std::size_t failures = 0;
  for (const auto& v : verdicts) failures += !v.passed;
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites name=\"memlens check\" tests=\"" + std::to_string(verdicts.size()) + "\" failures=\"" +
         std::to_string(failures) + "\">\n";
  out += "  <testsuite name=\"" + xml_escape(suite) + "\" tests=\"" + std::to_string(verdicts.size()) + "\" failures=\"" +
         std::to_string(failures) + "\" errors=\"0\" skipped=\"0\">\n";
  for (const auto& v : verdicts) {
    out += "    <testcase classname=\"memlens.check\" name=\"" + xml_escape(v.name) + "\"";
    if (v.passed) {
      out += "/>\n";
      continue;
    }
    out += ">\n      <failure message=\"" + xml_escape(v.message) + "\" type=\"memory\">";
    for (const auto& d : v.details) out += xml_escape(d) + "\n";
    out += "</failure>\n    </testcase>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

namespace {

// Workflow command escaping: data escapes %, CR and LF; properties also ':' and ','.
std::string gh_escape(const std::string& s, bool property) {
  std::string out;
  for (char c : s) {
    if (c == '%') out += "%25";
    else if (c == '\r') out += "%0D";
    else if (c == '\n') out += "%0A";
    else if (property && c == ':') out += "%3A";
    else if (property && c == ',') out += "%2C";
    else out += c;
  }
  return out;
}

// "file=F,line=L," for a site with a file and a line, "" otherwise.
std::string gh_location(const Report& r, SiteId site, const std::string& base_dir) {
  std::string loc = site_text(r.site(site), base_dir);
  auto colon = loc.rfind(':');
  if (site == 0 || colon == std::string::npos || colon + 1 >= loc.size() ||
      loc.find_first_not_of("0123456789", colon + 1) != std::string::npos)
    return "";
  return "file=" + gh_escape(loc.substr(0, colon), true) + ",line=" + loc.substr(colon + 1) + ",";
}

std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

std::string github_annotations(const Report& r, const std::vector<CheckVerdict>& verdicts, const std::string& base_dir) {
  std::string out;
  for (const auto& v : verdicts) {
    if (v.passed) continue;
    std::string message = v.message;
    for (const auto& d : v.details) message += "\n" + d;
    out += "::error " + gh_location(r, v.site, base_dir) + "title=" + gh_escape("memlens check " + v.name, true) +
           "::" + gh_escape(message, false) + "\n";
  }
  for (const Finding& f : r.findings)
    out += "::warning " + gh_location(r, f.site, base_dir) +
           "title=" + gh_escape("memlens " + std::string(finding_kind_name(f.kind)), true) +
           "::" + gh_escape(f.message + "\ndo: " + f.advice + " (saves " + bytes_text(f.saves) + ")", false) + "\n";
  return out;
}

std::string check_markdown(const std::string& trace, const std::vector<CheckVerdict>& verdicts) {
  std::size_t failed = 0;
  for (const auto& v : verdicts) failed += !v.passed;
  std::string out = "### memlens check: " + std::string(failed ? "failed" : "passed") + "\n\n`" + trace +
                    "`: " + std::to_string(verdicts.size() - failed) + " of " + std::to_string(verdicts.size()) +
                    " checks passed\n\n" + "| check | result | figure |\n|---|---|---|\n";
  for (const auto& v : verdicts)
    out += "| " + md_cell(v.name) + " | " + (v.passed ? "pass" : "**FAIL**") + " | " + md_cell(v.message) + " |\n";
  for (const auto& v : verdicts) {
    if (v.passed || v.details.empty()) continue;
    out += "\n**" + md_cell(v.name) + "**, where:\n\n";
    for (const auto& d : v.details) out += "- " + d + "\n";
  }
  return out;
}

}  // namespace memlens::analysis
