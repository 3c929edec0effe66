#pragma once
// What the analyses find in one trace, as plain data: the CLI renders it as text,
// Markdown or JSON (docs/report-schema.md), the viewer draws it, `check` and `diff`
// compare it. Bytes are block bytes (what the allocator handed out), times are
// nanoseconds since the trace's first event.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "memlens/trace/event.hpp"

namespace memlens::analysis {

using profiler::Category;
using profiler::CopyReason;
using profiler::ShapeRecord;

// A user call site, resolved once per report. Index 0 is "unknown" (no site recorded,
// e.g. memory allocated before recording began).
struct SiteRef {
  std::string location;  // "file:line", "" when unknown
  std::string function;
  bool operator==(const SiteRef&) const = default;
};
using SiteId = std::uint32_t;

// One frame of a stack as the report shows it.
struct FrameRef {
  std::string location;  // "file:line", "file" without a line, "" when unknown
  std::string function;
  std::string language;  // "python", "native", "unknown"
  bool operator==(const FrameRef&) const = default;
};
// A whole allocation stack, innermost frame first (PyTorch snapshots, --stacks recordings).
struct StackRef {
  std::vector<FrameRef> frames;
  bool operator==(const StackRef&) const = default;
};
using StackId = std::uint32_t;
// A stack's live bytes; `site` is the site its allocations were charged to.
struct StackBytes {
  StackId stack = 0;
  SiteId site = 0;
  std::uint64_t bytes = 0, blocks = 0;
};

std::string shape_text(const ShapeRecord& s);  // "[100, 1]"
std::string bytes_text(std::uint64_t bytes);   // "39.06 KiB"
std::uint64_t numel(const ShapeRecord& s);

struct CategoryBytes {
  Category category = Category::Unknown;
  std::uint64_t bytes = 0, blocks = 0;
};
struct SiteBytes {
  SiteId site = 0;
  std::uint64_t bytes = 0, blocks = 0;
};

// Live memory of one device at one moment, largest first.
struct LiveAt {
  std::uint64_t time_ns = 0;
  std::uint64_t allocated = 0, reserved = 0;
  std::uint64_t largest_free_block = 0;  // inside reserved segments
  std::vector<CategoryBytes> by_category;
  std::vector<SiteBytes> by_site;
  std::vector<StackBytes> by_stack;  // traces with stacks only; ids into Report::stacks
};

struct DeviceReport {
  std::uint8_t index = 0;  // into the trace header's devices
  std::string name;        // "sim:0"
  std::uint64_t capacity = 0;
  std::uint64_t allocs = 0, frees = 0, segment_allocs = 0, segment_frees = 0, ooms = 0;
  std::uint64_t allocated_total = 0;  // sum of every allocation's bytes
  std::uint64_t final_allocated = 0, final_reserved = 0;
  LiveAt peak_allocated;  // when allocated peaked, and what was live
  LiveAt peak_reserved;
};

// ---- leaks

struct LeakGroup {
  SiteId site = 0;
  Category category = Category::Unknown;
  std::uint64_t bytes = 0, blocks = 0;
  std::uint64_t time_ns = 0;  // the earliest of its blocks' allocations
};
// A site whose live bytes at step boundaries rise step after step.
struct GrowthLeak {
  SiteId site = 0;
  double bytes_per_step = 0;
  std::uint64_t steps_observed = 0;  // step boundaries at which the site had live memory
  std::uint64_t first_bytes = 0, last_bytes = 0;
  std::uint64_t time_ns = 0;  // the first step boundary it was seen at
};
struct LeakSection {
  std::vector<LeakGroup> alive_at_end;  // leaks: not parameters, gradients, optimiser state, or older than step 1
  std::uint64_t leaked_bytes = 0, leaked_blocks = 0;
  std::uint64_t expected_bytes = 0;  // alive at the end but not leaks (by the rule above)
  std::vector<GrowthLeak> growth;
};

// ---- broadcast

struct BroadcastFinding {
  SiteId site = 0;
  std::string op;
  std::vector<ShapeRecord> inputs;
  ShapeRecord output;
  double factor = 0;        // output elements / largest input's elements
  std::uint64_t bytes = 0;  // output bytes of one occurrence
  std::uint64_t count = 0;
  std::uint64_t time_ns = 0;  // the first occurrence
};
// A copy that read more bytes than its source block holds: an expand was materialised.
struct MaterializedExpand {
  SiteId site = 0;
  std::uint64_t bytes = 0, source_bytes = 0, count = 0;
  std::uint64_t time_ns = 0;  // the first occurrence
};
struct BroadcastSection {
  double threshold = 4;
  std::uint64_t floor_bytes = 0;
  std::uint64_t broadcast_ops = 0;  // every op that broadcast, flagged or not
  std::vector<BroadcastFinding> findings;
  std::vector<MaterializedExpand> materialized;
};

// ---- contiguity

struct LayoutCopy {
  SiteId site = 0;
  CopyReason reason = CopyReason::Contiguous;
  std::uint64_t count = 0, bytes = 0;
  std::string view_chain;     // the views that made the input non-contiguous, "transpose -> narrow"
  std::uint64_t time_ns = 0;  // the first occurrence
  std::uint64_t steps = 0;    // step intervals with copies (0 = before the first boundary counts as one)
  bool repeated = false;      // a habit, so a finding: copies in ≥ 2 steps (≥ 2 copies in a trace without steps)
};
struct ContiguitySection {
  std::vector<LayoutCopy> copies;
  std::uint64_t count = 0, bytes = 0;
};

// ---- transfers

struct TransferSite {
  SiteId site = 0;
  std::string from, to;  // device names
  std::uint64_t count = 0, bytes = 0, steps = 0;
};
struct StepTransfers {
  std::uint64_t step = 0;  // 0: before the first step boundary
  std::uint64_t count = 0, bytes = 0;
};
// The same source data sent again in later steps ("move the data set once").
struct ResentTransfer {
  SiteId site = 0;
  std::uint64_t bytes = 0;             // of one send
  std::uint64_t sources = 0;           // distinct source data (a batch of a data set is one)
  std::uint64_t times = 0, steps = 0;  // sends in all; the most steps one source was sent in
  std::uint64_t time_ns = 0;           // the first send
  std::uint8_t to = 0;                 // the destination device (an index into the header's)
};
struct TransferSection {
  std::vector<TransferSite> sites;
  std::vector<StepTransfers> per_step;
  std::vector<ResentTransfer> resent;
  std::uint64_t count = 0, bytes = 0;
};

// ---- churn

// A buffer allocated afresh, same size, every step at one site, and freed within it.
struct ChurnFinding {
  SiteId site = 0;
  std::uint64_t size = 0, allocs = 0, steps = 0;
  std::uint64_t time_ns = 0;  // the first allocation
  bool constant = false;      // the same value computed every step (else a buffer refilled)
};
struct TemporarySite {
  SiteId site = 0;
  std::uint64_t count = 0, bytes = 0;
};
struct ChurnSection {
  std::uint64_t window_events = 0;  // "temporary": freed within this many events
  std::vector<ChurnFinding> findings;
  std::vector<TemporarySite> temporaries;
  std::uint64_t temporary_count = 0, temporary_bytes = 0;
};

// ---- fragmentation and OOMs

struct FragmentationPoint {
  std::uint8_t device = 0;
  std::string when;  // "peak reserved", "end", "oom"
  std::uint64_t time_ns = 0, reserved = 0, allocated = 0, largest_free_block = 0;
  double reserved_over_allocated = 0;
};
// What replaying the trace's requests through one allocator configuration says of an OOM.
struct OomReplay {
  std::string config;  // "as recorded", "expandable_segments:True", ...
  bool fits = false;   // the failed request succeeds there
};
struct OomReport {
  std::uint8_t device = 0;
  std::uint64_t time_ns = 0, requested = 0, device_free = 0, reserved = 0, allocated = 0, largest_free_block = 0;
  SiteId site = 0;
  std::uint64_t event_index = 0;      // of the OOM event in the trace, from 0
  LiveAt holding;                     // what held the device: top sites and categories
  std::uint64_t replay_capacity = 0;  // the device size replay used (0: not replayed)
  std::vector<OomReplay> replay;
};
struct FragmentationSection {
  std::vector<FragmentationPoint> points;
  std::vector<OomReport> ooms;
};

// ---- timeline

// One bucket of a device's memory over time: extremes and the value at its end.
struct TimelineBucket {
  std::uint64_t time_ns = 0;  // start of the bucket
  std::uint64_t allocated_min = 0, allocated_max = 0, reserved_max = 0;
  std::uint64_t allocated_last = 0, reserved_last = 0;
  std::array<std::uint64_t, kCategoryCount> category_last{};  // allocated per Category at the bucket's end
  std::array<std::uint64_t, 8> site_last{};                   // allocated per top site (TimelineSeries::top_sites) at its end
};
struct TimelineSeries {
  std::uint8_t device = 0;
  std::uint64_t bucket_ns = 0;
  std::vector<TimelineBucket> buckets;
  std::vector<SiteId> top_sites;  // at most 8: the sites with the most live memory at any bucket's end
};
// A user annotation (profiler::Scope) from its begin to its end.
struct ScopeSpan {
  std::string name;
  std::uint32_t thread = 0;
  std::uint64_t begin_ns = 0, end_ns = 0;
};
struct TimelineSection {
  std::vector<TimelineSeries> series;
  std::vector<std::uint64_t> step_times_ns;
  std::vector<ScopeSpan> scopes;  // the first 100,000
};

// ---- findings: everything a person should act on, one line each

enum class FindingKind : std::uint8_t { Leak, Growth, Broadcast, MaterializedExpand, LayoutCopy, ResentTransfer, Churn, Oom };
std::string_view finding_kind_name(FindingKind k);  // "leak", "growth", "broadcast", ...

struct Finding {
  FindingKind kind = FindingKind::Leak;
  SiteId site = 0;
  std::uint64_t bytes = 0;    // what it costs: leaked, per occurrence, or in all (said by the message)
  std::string message;        // what was found
  std::uint64_t time_ns = 0;  // when it first happened
  std::string advice;         // what to do, one line
  // Bytes doing it would save: memory held (oom, growth, leak, broadcast, expand), bytes
  // copied (layout copies, resent transfers) or bytes allocated afresh (churn).
  std::uint64_t saves = 0;
};

struct Report {
  std::string path;
  std::string program;
  std::int64_t pid = 0;
  std::string notes;  // from the trace header
  // Why sites are unknown, when they are for want of line tables: "PROGRAM has no line
  // tables (built without -g): build with -g or CMAKE_BUILD_TYPE=RelWithDebInfo".
  std::string sites_note;
  bool ends_mid_run = false;  // from the trace header: alive at the end is not leaked
  std::string problem;        // why the trace is incomplete, "" when whole
  std::uint64_t events = 0;
  std::uint64_t duration_ns = 0;
  std::uint64_t steps = 0;
  std::vector<SiteRef> sites{SiteRef{}};
  std::vector<StackRef> stacks{StackRef{}};    // 0: no stack
  std::vector<DeviceReport> devices;           // devices with any memory event
  std::vector<SiteBytes> allocations_by_site;  // every allocation over the trace, largest total first
  LeakSection leaks;
  BroadcastSection broadcast;
  ContiguitySection contiguity;
  TransferSection transfers;
  ChurnSection churn;
  FragmentationSection fragmentation;
  TimelineSection timeline;
  std::vector<Finding> findings;

  const SiteRef& site(SiteId id) const { return id < sites.size() ? sites[id] : sites[0]; }
  const StackRef& stack(StackId id) const { return id < stacks.size() ? stacks[id] : stacks[0]; }
  const DeviceReport* device(std::string_view name) const;
  // The device a one-number summary speaks of: the busiest accelerator, else cpu.
  const DeviceReport* main_device() const;
};

}  // namespace memlens::analysis
