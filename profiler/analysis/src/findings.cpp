// Findings: every section's results as one list of sentences, each saying what was
// found, where, what it costs and, where memlens knows, what to do.
#include <algorithm>
#include <cstdio>
#include <utility>

#include "analyses.hpp"

namespace memlens::analysis {

namespace {

std::string shapes_text(const std::vector<ShapeRecord>& inputs) {
  std::string out;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    out += (i == 0 ? "" : i + 1 == inputs.size() ? " and " : ", ") + shape_text(inputs[i]);
  return out;
}

// Moving the data once is the advice only where it fits beside the run's peak on the
// device it is sent to (a capacity of 0 is unknown: assumed to fit).
std::string resend_advice(const Report& r, const ResentTransfer& t) {
  const std::uint64_t data = t.bytes * t.sources;
  for (const DeviceReport& d : r.devices)
    if (d.index == t.to && d.capacity && d.peak_allocated.allocated + data > d.capacity)
      return "the data (" + bytes_text(data) + ") does not fit on " + d.name + " beside the run's peak (" +
             bytes_text(d.peak_allocated.allocated) + " of " + bytes_text(d.capacity) +
             "): stream it from pinned memory with non_blocking copies, so they overlap the compute";
  return "move the data to the device once, before the loop";
}

std::string times(std::uint64_t n) { return std::to_string(n) + (n == 1 ? " time" : " times"); }

std::string factor_text(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, f >= 10 ? "%.0fx" : "%.1fx", f);
  return buf;
}

// The first setting replay found would have fit a request that failed as recorded.
const OomReplay* fitting_setting(const OomReport& o) {
  if (o.replay.empty() || o.replay.front().fits) return nullptr;
  for (std::size_t i = 1; i < o.replay.size(); ++i)
    if (o.replay[i].fits) return &o.replay[i];
  return nullptr;
}

// "; replay: expandable_segments:True would have fit it".
std::string oom_remedy(const OomReport& o) {
  if (o.replay.empty() || o.replay.front().fits) return "";
  if (const OomReplay* fit = fitting_setting(o)) return "; replay: " + fit->config + " would have fit it";
  return "; replay: no allocator setting fits it, only less memory held";
}

// What to do about an OOM and what it frees: the setting replay found, which gives back
// the cache stranded in segments; else the largest holder.
std::pair<std::string, std::uint64_t> oom_advice(const Report& r, const OomReport& o) {
  if (const OomReplay* fit = fitting_setting(o))
    return {"run with PYTORCH_CUDA_ALLOC_CONF (MEMLENS_ALLOC_CONF) set to " + fit->config +
                ": the cache stranded in segments becomes usable",
            o.reserved - std::min(o.reserved, o.allocated)};
  if (!o.holding.by_site.empty()) {
    const SiteBytes& top = o.holding.by_site.front();
    std::string where = r.site(top.site).location.empty() ? "<unknown>" : r.site(top.site).location;
    return {"hold less at the failure: " + where + " holds the most (" + bytes_text(top.bytes) +
                "); free it earlier, use a smaller batch, or checkpoint activations",
            top.bytes};
  }
  return {"hold less at the failure: a smaller batch, or checkpoint activations", 0};
}

}  // namespace

void gather_findings(Report& r) {
  auto add = [&](FindingKind k, SiteId site, std::uint64_t b, std::string msg, std::uint64_t time, std::string advice,
                 std::uint64_t saves) {
    r.findings.push_back({k, site, b, std::move(msg), time, std::move(advice), saves});
  };
  for (const OomReport& o : r.fragmentation.ooms) {
    auto [advice, saves] = oom_advice(r, o);
    add(FindingKind::Oom, o.site, o.requested,
        "out of memory asking for " + bytes_text(o.requested) + ": " + bytes_text(o.device_free) + " free, " +
            bytes_text(o.reserved) + " reserved, " + bytes_text(o.allocated) + " allocated, largest free block " +
            bytes_text(o.largest_free_block) + oom_remedy(o),
        o.time_ns, advice, saves);
  }
  for (const GrowthLeak& g : r.leaks.growth)
    add(FindingKind::Growth, g.site, g.last_bytes,
        "live memory grows by " + bytes_text(static_cast<std::uint64_t>(g.bytes_per_step)) + " per step over " +
            std::to_string(g.steps_observed) + " steps (" + bytes_text(g.first_bytes) + " -> " + bytes_text(g.last_bytes) +
            "): something keeps every step's tensors alive",
        g.time_ns,
        "keep only what the next step needs from this line: a number (.item()) or a detached tensor (.detach()), "
        "not the tensor with its graph",
        g.last_bytes - std::min(g.last_bytes, g.first_bytes));
  // A snapshot taken mid-run holds the run's working set: listed, not found to leak.
  for (const LeakGroup& l : r.ends_mid_run ? std::vector<LeakGroup>{} : r.leaks.alive_at_end)
    add(FindingKind::Leak, l.site, l.bytes,
        bytes_text(l.bytes) + " in " + std::to_string(l.blocks) + (l.blocks == 1 ? " block" : " blocks") + " (" +
            std::string(profiler::category_name(l.category)) + ") still alive at the end of the trace",
        l.time_ns, "drop the last reference before the run ends (a cache, a global, a list that keeps it)", l.bytes);
  for (const BroadcastFinding& b : r.broadcast.findings) {
    std::uint64_t largest_input = b.factor > 0 ? static_cast<std::uint64_t>(static_cast<double>(b.bytes) / b.factor) : 0;
    add(FindingKind::Broadcast, b.site, b.bytes,
        b.op + ": " + shapes_text(b.inputs) + " broadcast to " + shape_text(b.output) + ", " + factor_text(b.factor) +
            " the largest input: " + bytes_text(b.bytes) + " each, " + times(b.count),
        b.time_ns,
        "check the shapes (a [N] and an [N, 1] broadcast to [N, N]): reshape one operand to match, or reduce before "
        "combining",
        b.bytes - std::min(b.bytes, largest_input));
  }
  for (const MaterializedExpand& m : r.broadcast.materialized)
    add(FindingKind::MaterializedExpand, m.site, m.bytes,
        "a copy materialised an expanded tensor: " + bytes_text(m.bytes) + " from a " + bytes_text(m.source_bytes) + " block, " +
            times(m.count),
        m.time_ns, "keep the expanded tensor a view: let the op that uses it broadcast, instead of contiguous() or clone()",
        m.bytes - std::min(m.bytes, m.source_bytes));
  for (const LayoutCopy& c : r.contiguity.copies)
    if (c.repeated)
      add(FindingKind::LayoutCopy, c.site, c.bytes,
          std::string(profiler::copy_reason_name(c.reason)) + " copy of a non-contiguous input" +
              (c.view_chain.empty() ? "" : " (after " + c.view_chain + ")") + ": " + times(c.count) + ", " + bytes_text(c.bytes) +
              " in all",
          c.time_ns,
          "make the input contiguous once, outside the loop, or keep it in the layout the op reads (no " +
              (c.view_chain.empty() ? std::string("view") : c.view_chain) + " in the loop)",
          c.count > 1 ? c.bytes - c.bytes / c.count : 0);
  for (const ResentTransfer& t : r.transfers.resent)
    add(FindingKind::ResentTransfer, t.site, t.bytes * t.times,
        std::to_string(t.sources) + (t.sources == 1 ? " source" : " sources") + " of " + bytes_text(t.bytes) +
            " sent again and again, each in " + std::to_string(t.steps) + " steps (" + std::to_string(t.times) + " sends)",
        t.time_ns, resend_advice(r, t), t.bytes * (t.times - std::min(t.times, t.sources)));
  for (const ChurnFinding& c : r.churn.findings) {
    const std::string times = " (" + std::to_string(c.allocs) + " allocations in " + std::to_string(c.steps) + " steps)";
    if (c.constant)
      add(FindingKind::Churn, c.site, c.size,
          "the same " + bytes_text(c.size) + " computed afresh every step from inputs that do not change" + times, c.time_ns,
          "build it once before the loop (a module buffer, sliced per step if its size varies) and reuse it",
          c.size * (c.allocs - std::min<std::uint64_t>(c.allocs, 1)));
    else
      add(FindingKind::Churn, c.site, c.size, "a fresh " + bytes_text(c.size) + " buffer every step" + times, c.time_ns,
          "allocate it once before the loop and refill it in place (copy_, fill_, zero_)",
          c.size * (c.allocs - std::min<std::uint64_t>(c.allocs, 1)));
  }
}

}  // namespace memlens::analysis
