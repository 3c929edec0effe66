// The layout of a report: which facts each section shows, in what order.
#include "memlens/analysis/report_layout.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace memlens::analysis {

namespace {

std::string num(std::uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}
std::string seconds(std::uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", static_cast<double>(ns) / 1e9);
  return buf;
}
std::string percent(std::uint64_t part, std::uint64_t whole) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f%%", whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
  return buf;
}
std::string fixed(double v, const char* fmt = "%.2f") {
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

bool wanted(const RenderOptions& o, Section s) { return std::find(o.sections.begin(), o.sections.end(), s) != o.sections.end(); }

class Layout {
 public:
  Layout(const Report& r, const RenderOptions& o) : r_(r), o_(o) {}

  std::string site(SiteId id) const { return site_text(r_.site(id), o_.base_dir); }
  // The full "file:line" of a site, where the viewer looks for its source.
  std::string where(SiteId id) const { return r_.site(id).location; }
  static double as_key(std::uint64_t v) { return static_cast<double>(v); }
  std::string device_name(std::uint8_t index) const {
    for (const auto& d : r_.devices)
      if (d.index == index) return d.name;
    return "device " + std::to_string(index);
  }

  Block summary() const {
    Block b{2, "summary", {}};
    std::string head = r_.program + " (pid " + std::to_string(r_.pid) + "): " + num(r_.events) + " events over " +
                       seconds(r_.duration_ns) + ", " + num(r_.steps) + (r_.steps == 1 ? " step" : " steps");
    b.parts.push_back({head, {}, false});
    if (!r_.problem.empty()) b.parts.push_back({"warning: " + r_.problem, {}, true});
    if (!r_.notes.empty()) b.parts.push_back({"note: " + r_.notes, {}, false});
    if (!r_.sites_note.empty()) b.parts.push_back({"note: " + r_.sites_note, {}, false});
    Table t{{"device", "peak allocated", "at", "peak reserved", "final allocated", "allocs", "OOMs"},
            {false, true, true, true, true, true, true},
            -1,
            {}};
    for (const auto& d : r_.devices)
      t.rows.push_back(Row{d.name, bytes_text(d.peak_allocated.allocated), seconds(d.peak_allocated.time_ns),
                           bytes_text(d.peak_reserved.reserved), bytes_text(d.final_allocated), num(d.allocs), num(d.ooms)}
                           .with({0, as_key(d.peak_allocated.allocated), as_key(d.peak_allocated.time_ns),
                                  as_key(d.peak_reserved.reserved), as_key(d.final_allocated), as_key(d.allocs), as_key(d.ooms)},
                                 d.peak_allocated.time_ns, ""));
    b.parts.push_back({"", t, false});
    // The summary alone lists every finding; beside other sections, those sections' findings.
    bool alone = o_.sections.size() == 1;
    std::vector<const Finding*> shown;
    for (const Finding& f : r_.findings)
      if (alone || wanted(o_, section_of(f.kind))) shown.push_back(&f);
    b.parts.push_back(
        {shown.empty() ? "no findings" : num(shown.size()) + (shown.size() == 1 ? " finding:" : " findings:"), {}, false});
    for (const Finding* f : shown)
      b.parts.push_back({std::string(finding_kind_name(f->kind)) + " at " + site(f->site) + ": " + f->message +
                             "; do: " + f->advice + " (saves " + bytes_text(f->saves) + ")",
                         {},
                         true});
    return b;
  }

  // What `report --follow` redraws: the memory now and at its peaks, the newest findings.
  Block live(std::string_view state, const std::string& reason, std::size_t newest) const {
    Block b{2, std::string(state), {}};
    if (!reason.empty()) b.parts.push_back({reason, {}, true});
    b.parts.push_back({r_.program + " (pid " + std::to_string(r_.pid) + "): " + num(r_.events) + " events over " +
                           seconds(r_.duration_ns) + ", " + num(r_.steps) + (r_.steps == 1 ? " step" : " steps"),
                       {},
                       false});
    if (!r_.problem.empty()) b.parts.push_back({"warning: " + r_.problem, {}, true});
    Table t{{"device", "allocated now", "peak allocated", "at", "reserved now", "peak reserved"},
            {false, true, true, true, true, true},
            -1,
            {}};
    for (const auto& d : r_.devices)
      t.rows.push_back(Row{d.name, bytes_text(d.final_allocated), bytes_text(d.peak_allocated.allocated),
                           seconds(d.peak_allocated.time_ns), bytes_text(d.final_reserved),
                           bytes_text(d.peak_reserved.reserved)});
    b.parts.push_back({"", t, false});
    std::vector<const Finding*> found;
    for (const Finding& f : r_.findings) found.push_back(&f);
    std::stable_sort(found.begin(), found.end(), [](const Finding* a, const Finding* c) { return a->time_ns > c->time_ns; });
    if (found.size() > newest) found.resize(newest);
    b.parts.push_back({found.empty() ? "no findings"
                       : found.size() == r_.findings.size()
                           ? num(found.size()) + (found.size() == 1 ? " finding:" : " findings:")
                           : "the newest " + num(found.size()) + " of " + num(r_.findings.size()) + " findings:",
                       {},
                       false});
    for (const Finding* f : found)
      b.parts.push_back(
          {seconds(f->time_ns) + " " + std::string(finding_kind_name(f->kind)) + " at " + site(f->site) + ": " + f->message,
           {},
           true});
    return b;
  }

  Block peak() const {
    Block b{2, "peak", {}};
    for (const auto& d : r_.devices) {
      const LiveAt& p = d.peak_allocated;
      b.parts.push_back({d.name + ": allocated peaked at " + bytes_text(p.allocated) + " at " + seconds(p.time_ns) + " (" +
                             bytes_text(p.reserved) + " reserved); reserved peaked at " + bytes_text(d.peak_reserved.reserved) +
                             " at " + seconds(d.peak_reserved.time_ns),
                         {},
                         false});
      Table cats{{"category", "bytes", "share", "blocks"}, {false, true, true, true}, -1, {}};
      for (const auto& c : p.by_category)
        cats.rows.push_back(Row{std::string(profiler::category_name(c.category)), bytes_text(c.bytes),
                                percent(c.bytes, p.allocated), num(c.blocks)}
                                .with({0, as_key(c.bytes), as_key(c.bytes), as_key(c.blocks)}, p.time_ns, ""));
      b.parts.push_back({"", cats, false});
      Table sites{{"site", "bytes", "share", "blocks"}, {false, true, true, true}, 0, {}};
      for (const auto& s : p.by_site)
        sites.rows.push_back(Row{site(s.site), bytes_text(s.bytes), percent(s.bytes, p.allocated), num(s.blocks)}.with(
            {0, as_key(s.bytes), as_key(s.bytes), as_key(s.blocks)}, p.time_ns, where(s.site)));
      b.parts.push_back({"", sites, false});
      if (o_.stacks) add_stacks(b, p);
    }
    return b;
  }

  // "c10::impl::wrap_kernel_functor_unboxed_<...>::call(...)": a C++ signature's template
  // arguments and parameters hide its name in a column.
  static std::string without_parameters(const std::string& f) {
    std::string out;
    int angle = 0, paren = 0;
    for (char c : f) {
      if (paren == 0 && c == '<') {
        if (angle++ == 0) out += "<...>";
      } else if (paren == 0 && c == '>' && angle > 0) {
        --angle;
      } else if (angle == 0 && c == '(') {
        if (paren++ == 0) out += "(...)";
      } else if (angle == 0 && c == ')' && paren > 0) {
        --paren;
      } else if (angle == 0 && paren == 0) {
        out += c;
      }
    }
    return angle == 0 && paren == 0 ? out : f;  // unbalanced: not a signature, shown as is
  }

  // Each stack at the peak, frame by frame (innermost first).
  void add_stacks(Block& b, const LiveAt& p) const {
    if (p.by_stack.empty()) {
      b.parts.push_back({"no stacks in this trace (record with --stacks; PyTorch snapshots have them)", {}, false});
      return;
    }
    for (const auto& s : p.by_stack) {
      b.parts.push_back(
          {"stack holding " + bytes_text(s.bytes) + " in " + num(s.blocks) + " blocks, charged to " + site(s.site) + ":",
           {},
           false});
      Table t{{"frame", "function", "language"}, {false, false, false}, 0, {}};
      for (const auto& f : r_.stack(s.stack).frames)
        t.rows.push_back({f.location.empty() ? "?" : site_text(SiteRef{f.location, ""}, o_.base_dir),
                          f.language == "python" ? f.function : without_parameters(f.function), f.language});
      b.parts.push_back({"", t, false});
    }
  }

  // "replay on a 16.00 GiB device: as recorded fails too; expandable_segments:True fits it"
  static std::string replay_verdict(const OomReport& o) {
    std::string out = "replay on a " + bytes_text(o.replay_capacity) + " device:";
    for (std::size_t i = 0; i < o.replay.size(); ++i)
      out += std::string(i ? ";" : "") + " " + o.replay[i].config +
             (i == 0 ? (o.replay[i].fits ? " fits it (the failure depended on more than the allocator)" : " fails too")
                     : (o.replay[i].fits ? " fits it" : " fails"));
    return out;
  }

  Block leaks() const {
    const LeakSection& l = r_.leaks;
    Block b{2, "leaks", {}};
    if (r_.ends_mid_run)
      b.parts.push_back({bytes_text(l.leaked_bytes + l.expected_bytes) +
                             " alive when the snapshot was taken, mid-run: the working set then, not leaks by "
                             "themselves (a site that grows step after step is)",
                         {},
                         false});
    else
      b.parts.push_back({bytes_text(l.leaked_bytes) + " in " + num(l.leaked_blocks) +
                             " blocks alive at the end and not expected to be (" + bytes_text(l.expected_bytes) +
                             " of parameters, gradients, optimiser state and set-up also alive)",
                         {},
                         false});
    if (!l.alive_at_end.empty()) {
      Table t{{"site", "category", "bytes", "blocks"}, {false, false, true, true}, 0, {}};
      for (const auto& g : l.alive_at_end)
        t.rows.push_back(
            Row{site(g.site), std::string(profiler::category_name(g.category)), bytes_text(g.bytes), num(g.blocks)}.with(
                {0, 0, as_key(g.bytes), as_key(g.blocks)}, g.time_ns, where(g.site)));
      b.parts.push_back({"", t, false});
    }
    if (l.growth.empty()) {
      b.parts.push_back({"no site grows step after step", {}, false});
    } else {
      Table t{{"growing site", "per step", "steps", "first", "last"}, {false, true, true, true, true}, 0, {}};
      for (const auto& g : l.growth)
        t.rows.push_back(Row{site(g.site), bytes_text(static_cast<std::uint64_t>(g.bytes_per_step)), num(g.steps_observed),
                             bytes_text(g.first_bytes), bytes_text(g.last_bytes)}
                             .with({0, g.bytes_per_step, as_key(g.steps_observed), as_key(g.first_bytes), as_key(g.last_bytes)},
                                   g.time_ns, where(g.site)));
      b.parts.push_back({"", t, false});
    }
    return b;
  }

  Block broadcast() const {
    const BroadcastSection& s = r_.broadcast;
    Block b{2, "broadcast", {}};
    b.parts.push_back({num(s.broadcast_ops) + " ops broadcast; flagged: output at least " + fixed(s.threshold, "%g") +
                           "x the largest input and at least " + bytes_text(s.floor_bytes),
                       {},
                       false});
    if (!s.findings.empty()) {
      Table t{
          {"site", "op", "inputs", "output", "factor", "bytes", "count"}, {false, false, false, false, true, true, true}, 0, {}};
      for (const auto& f : s.findings) {
        std::string in;
        for (std::size_t i = 0; i < f.inputs.size(); ++i) in += (i ? " " : "") + shape_text(f.inputs[i]);
        t.rows.push_back(
            Row{site(f.site), f.op, in, shape_text(f.output), fixed(f.factor, "%.1f"), bytes_text(f.bytes), num(f.count)}.with(
                {0, 0, 0, 0, f.factor, as_key(f.bytes), as_key(f.count)}, f.time_ns, where(f.site)));
      }
      b.parts.push_back({"", t, false});
    }
    if (!s.materialized.empty()) {
      Table t{{"materialised expand at", "bytes", "from", "count"}, {false, true, true, true}, 0, {}};
      for (const auto& m : s.materialized)
        t.rows.push_back(Row{site(m.site), bytes_text(m.bytes), bytes_text(m.source_bytes), num(m.count)}.with(
            {0, as_key(m.bytes), as_key(m.source_bytes), as_key(m.count)}, m.time_ns, where(m.site)));
      b.parts.push_back({"", t, false});
    }
    return b;
  }

  Block contiguity() const {
    const ContiguitySection& s = r_.contiguity;
    Block b{2, "contiguity", {}};
    b.parts.push_back({num(s.count) + " copies made for layout, " + bytes_text(s.bytes) + " in all", {}, false});
    if (!s.copies.empty()) {
      Table t{{"site", "reason", "after views", "count", "bytes"}, {false, false, false, true, true}, 0, {}};
      for (const auto& c : s.copies)
        t.rows.push_back(Row{site(c.site), std::string(profiler::copy_reason_name(c.reason)),
                             c.view_chain.empty() ? "-" : c.view_chain, num(c.count), bytes_text(c.bytes)}
                             .with({0, 0, 0, as_key(c.count), as_key(c.bytes)}, c.time_ns, where(c.site)));
      b.parts.push_back({"", t, false});
    }
    return b;
  }

  Block transfers() const {
    const TransferSection& s = r_.transfers;
    Block b{2, "transfers", {}};
    b.parts.push_back({num(s.count) + " copies between devices, " + bytes_text(s.bytes) + " in all", {}, false});
    if (!s.sites.empty()) {
      Table t{{"site", "from", "to", "count", "bytes", "steps"}, {false, false, false, true, true, true}, 0, {}};
      for (const auto& x : s.sites)
        t.rows.push_back(Row{site(x.site), x.from, x.to, num(x.count), bytes_text(x.bytes), num(x.steps)}.with(
            {0, 0, 0, as_key(x.count), as_key(x.bytes), as_key(x.steps)}, 0, where(x.site)));
      b.parts.push_back({"", t, false});
    }
    if (s.per_step.size() > 1) {
      std::uint64_t most = 0, total = 0;
      for (const auto& p : s.per_step) most = std::max(most, p.bytes), total += p.bytes;
      b.parts.push_back({"per step: " + bytes_text(total / s.per_step.size()) + " on average over " + num(s.per_step.size()) +
                             " steps, at most " + bytes_text(most),
                         {},
                         false});
    }
    if (!s.resent.empty()) {
      Table t{{"resent from", "bytes each", "sources", "sends", "steps"}, {false, true, true, true, true}, 0, {}};
      for (const auto& x : s.resent)
        t.rows.push_back(Row{site(x.site), bytes_text(x.bytes), num(x.sources), num(x.times), num(x.steps)}.with(
            {0, as_key(x.bytes), as_key(x.sources), as_key(x.times), as_key(x.steps)}, x.time_ns, where(x.site)));
      b.parts.push_back({"", t, false});
    }
    return b;
  }

  Block churn() const {
    const ChurnSection& s = r_.churn;
    Block b{2, "churn", {}};
    if (s.findings.empty()) b.parts.push_back({"no buffer is allocated afresh every step", {}, false});
    else {
      Table t{{"made afresh every step at", "what", "size", "allocs", "steps"}, {false, false, true, true, true}, 0, {}};
      for (const auto& c : s.findings)
        t.rows.push_back(
            Row{site(c.site), c.constant ? "constant" : "buffer", bytes_text(c.size), num(c.allocs), num(c.steps)}.with(
                {0, 0, as_key(c.size), as_key(c.allocs), as_key(c.steps)}, c.time_ns, where(c.site)));
      b.parts.push_back({"", t, false});
    }
    b.parts.push_back({num(s.temporary_count) + " temporaries (freed within " + num(s.window_events) + " events), " +
                           bytes_text(s.temporary_bytes) + " in all",
                       {},
                       false});
    if (!s.temporaries.empty()) {
      Table t{{"temporaries at", "count", "bytes"}, {false, true, true}, 0, {}};
      for (const auto& x : s.temporaries)
        t.rows.push_back(
            Row{site(x.site), num(x.count), bytes_text(x.bytes)}.with({0, as_key(x.count), as_key(x.bytes)}, 0, where(x.site)));
      b.parts.push_back({"", t, false});
    }
    return b;
  }

  Block fragmentation() const {
    const FragmentationSection& s = r_.fragmentation;
    Block b{2, "fragmentation", {}};
    Table t{{"device", "when", "at", "reserved", "allocated", "reserved/allocated", "largest free block"},
            {false, false, true, true, true, true, true},
            -1,
            {}};
    for (const auto& p : s.points)
      t.rows.push_back(Row{device_name(p.device), p.when, seconds(p.time_ns), bytes_text(p.reserved), bytes_text(p.allocated),
                           p.allocated ? fixed(p.reserved_over_allocated) : "-", bytes_text(p.largest_free_block)}
                           .with({0, 0, as_key(p.time_ns), as_key(p.reserved), as_key(p.allocated), p.reserved_over_allocated,
                                  as_key(p.largest_free_block)},
                                 p.time_ns, ""));
    b.parts.push_back({"", t, false});
    for (const auto& o : s.ooms) {
      b.parts.push_back({"OOM on " + device_name(o.device) + " at " + seconds(o.time_ns) + " asking for " +
                             bytes_text(o.requested) + " at " + site(o.site),
                         {},
                         true});
      b.parts.push_back({"  free on the device " + bytes_text(o.device_free) + "; reserved " + bytes_text(o.reserved) +
                             ", of which " + bytes_text(o.reserved - std::min(o.reserved, o.allocated)) +
                             " cached but unallocated; largest free block " + bytes_text(o.largest_free_block),
                         {},
                         false});
      std::string held;
      for (const auto& x : o.holding.by_site) held += (held.empty() ? "" : ", ") + bytes_text(x.bytes) + " at " + site(x.site);
      std::string cats;
      for (const auto& c : o.holding.by_category)
        cats += (cats.empty() ? "" : ", ") + std::string(profiler::category_name(c.category)) + " " + bytes_text(c.bytes);
      if (!held.empty()) b.parts.push_back({"  held by " + held + (cats.empty() ? "" : "; by category " + cats), {}, false});
      if (!o.replay.empty()) b.parts.push_back({"  " + replay_verdict(o), {}, false});
    }
    return b;
  }

  Block timeline() const {
    static const char* bars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    Block b{2, "timeline", {}};
    for (const auto& ts : r_.timeline.series) {
      std::uint64_t top = 0;
      for (const auto& k : ts.buckets) top = std::max(top, k.allocated_max);
      // At most 64 characters: each shows the highest of the buckets it covers.
      std::size_t n = ts.buckets.size(), w = std::min<std::size_t>(n, 64);
      std::string line;
      for (std::size_t i = 0; i < w; ++i) {
        std::uint64_t m = 0;
        for (std::size_t j = i * n / w; j < (i + 1) * n / w; ++j) m = std::max(m, ts.buckets[j].allocated_max);
        // In floating point: m * 8 and top + 1 overflow for a block of 2^64-1 bytes.
        const double level = top ? 8.0 * static_cast<double>(m) / (static_cast<double>(top) + 1.0) : 0;
        line += bars[std::min<std::uint64_t>(7, static_cast<std::uint64_t>(level))];
      }
      b.parts.push_back({device_name(ts.device) + " allocated, 0 to " + bytes_text(top) + ": " + line, {}, false});
    }
    return b;
  }

 private:
  const Report& r_;
  const RenderOptions& o_;
};

}  // namespace

std::vector<Block> layout_report(const std::vector<Report>& reports, const RenderOptions& options) {
  std::vector<Block> out;
  if (reports.size() > 1) {
    Block ranks{1, "ranks", {}};
    Table t{{"rank", "trace", "program", "device", "peak allocated", "peak reserved", "findings"},
            {true, false, false, false, true, true, true},
            1,
            {}};
    for (std::size_t i = 0; i < reports.size(); ++i) {
      const Report& r = reports[i];
      const DeviceReport* d = r.main_device();
      t.rows.push_back({std::to_string(i), r.path, r.program.substr(r.program.rfind('/') + 1), d ? d->name : "-",
                        d ? bytes_text(d->peak_allocated.allocated) : "-", d ? bytes_text(d->peak_reserved.reserved) : "-",
                        num(r.findings.size())});
    }
    ranks.parts.push_back({"", t, false});
    out.push_back(std::move(ranks));
  }
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const Report& r = reports[i];
    if (reports.size() > 1) out.push_back({1, "rank " + std::to_string(i) + ": " + r.path, {}});
    Layout l(r, options);
    for (Section s : options.sections) {
      switch (s) {
        case Section::Summary:
          out.push_back(l.summary());
          break;
        case Section::Peak:
          out.push_back(l.peak());
          break;
        case Section::Leaks:
          out.push_back(l.leaks());
          break;
        case Section::Broadcast:
          out.push_back(l.broadcast());
          break;
        case Section::Contiguity:
          out.push_back(l.contiguity());
          break;
        case Section::Transfers:
          out.push_back(l.transfers());
          break;
        case Section::Churn:
          out.push_back(l.churn());
          break;
        case Section::Fragmentation:
          out.push_back(l.fragmentation());
          break;
        case Section::Timeline:
          out.push_back(l.timeline());
          break;
      }
    }
  }
  return out;
}

Block layout_live_summary(const Report& report, std::string_view state, const std::string& reason, const RenderOptions& options,
                          std::size_t newest_findings) {
  return Layout(report, options).live(state, reason, newest_findings);
}

std::string layout_json(const std::vector<Block>& blocks) {
  nlohmann::json out = nlohmann::json::array();
  for (const Block& b : blocks) {
    nlohmann::json parts = nlohmann::json::array();
    for (const Part& p : b.parts) {
      if (!p.table) {
        parts.push_back({{"text", p.text}, {"finding", p.finding}});
        continue;
      }
      nlohmann::json rows = nlohmann::json::array();
      for (const Row& r : p.table->rows)
        rows.push_back({{"cells", r.cells}, {"keys", r.keys}, {"time_ns", r.time_ns}, {"location", r.location}});
      parts.push_back({{"table", {{"header", p.table->header}, {"numeric", p.table->numeric}, {"rows", rows}}}});
    }
    out.push_back({{"level", b.level}, {"title", b.title}, {"parts", parts}});
  }
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace memlens::analysis
