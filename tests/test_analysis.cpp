// Each analysis on small hand-built traces, with exact expected numbers.
#include <catch2/catch.hpp>
#include <memlens/analysis/analyze.hpp>
#include <memlens/analysis/check.hpp>
#include <memlens/analysis/diff.hpp>
#include <memlens/analysis/memory_at.hpp>
#include <memlens/analysis/render.hpp>
#include <nlohmann/json.hpp>

#include "trace_builder.hpp"

using namespace memlens::analysis;
using memlens::profiler::CopyReason;
using memlens::profiler::ViewKind;
using memlens::test::TraceBuilder;

namespace {

constexpr std::uint64_t kSeg = 0x10000000, kMiB = 1 << 20;

const DeviceReport& sim(const Report& r) {
  REQUIRE(r.device("sim:0") != nullptr);
  return *r.device("sim:0");
}

std::size_t count(const Report& r, FindingKind k) {
  return static_cast<std::size_t>(
      std::count_if(r.findings.begin(), r.findings.end(), [&](const Finding& f) { return f.kind == k; }));
}

}  // namespace

TEST_CASE("peak: when allocated and reserved peaked and what was live then, by site and category", "[analysis]") {
  TraceBuilder t("peak");
  auto a = t.site(10), b = t.site(20), c = t.site(30);
  t.segment(kSeg, 2 * kMiB);
  t.alloc(kSeg, 1000 * 1024, a);  // t = 1.002 ms
  t.category(kSeg, Category::Parameter);
  t.alloc(kSeg + kMiB, 512 * 1024, b);  // the peak: 1.5 MiB
  t.free(kSeg, 1000 * 1024);
  t.alloc(kSeg, 256 * 1024, c);
  t.segment(kSeg + 2 * kMiB, 2 * kMiB);  // reserved peak: 4 MiB
  Report r = analyze(t.read());
  const DeviceReport& d = sim(r);
  CHECK(d.peak_allocated.allocated == 1512 * 1024);
  CHECK(d.peak_allocated.time_ns == 3000);  // the third event after the first
  CHECK(d.peak_allocated.reserved == 2 * kMiB);
  REQUIRE(d.peak_allocated.by_site.size() == 2);
  CHECK(r.site(d.peak_allocated.by_site[0].site).location == "model.cpp:10");
  CHECK(d.peak_allocated.by_site[0].bytes == 1000 * 1024);
  CHECK(r.site(d.peak_allocated.by_site[1].site).location == "model.cpp:20");
  REQUIRE(d.peak_allocated.by_category.size() == 2);
  CHECK(d.peak_allocated.by_category[0].category == Category::Parameter);
  CHECK(d.peak_allocated.by_category[1].category == Category::Unknown);
  CHECK(d.peak_allocated.largest_free_block == 512 * 1024);  // the segment's tail
  CHECK(d.peak_reserved.reserved == 4 * kMiB);
  CHECK(d.final_allocated == 768 * 1024);
  CHECK(d.allocs == 3);
  CHECK(d.frees == 1);
  CHECK(d.segment_allocs == 2);
  CHECK(r.events == 7);
}

TEST_CASE("leaks: alive at the end after the first step, and sites that grow every step", "[analysis]") {
  TraceBuilder t("leaks");
  auto setup = t.site(5), grow = t.site(42), temp = t.site(50), param = t.site(3);
  t.segment(kSeg, 2 * kMiB);
  t.alloc(kSeg, 4096, setup);  // before the first step: not a leak
  t.alloc(kSeg + 4096, 8192, param);
  t.category(kSeg + 4096, Category::Parameter);
  t.step();
  for (int i = 0; i < 5; ++i) {
    t.alloc(kSeg + 65536 + i * 1024, 1024, grow);  // kept: a loss with its graph
    t.alloc(kSeg + kMiB, 65536, temp);             // freed within the step
    t.free(kSeg + kMiB, 65536);
    t.step();
  }
  Report r = analyze(t.read());
  CHECK(r.steps == 6);
  CHECK(r.leaks.leaked_bytes == 5 * 1024);
  CHECK(r.leaks.leaked_blocks == 5);
  CHECK(r.leaks.expected_bytes == 4096 + 8192);
  REQUIRE(r.leaks.alive_at_end.size() == 1);
  CHECK(r.site(r.leaks.alive_at_end[0].site).location == "model.cpp:42");
  REQUIRE(r.leaks.growth.size() == 1);
  const GrowthLeak& g = r.leaks.growth[0];
  CHECK(r.site(g.site).location == "model.cpp:42");
  CHECK(g.bytes_per_step == 1024.0);
  // Survivors of earlier steps at the boundaries after steps 2..5: 1, 2, 3, 4 KiB.
  CHECK(g.steps_observed == 4);
  CHECK(g.first_bytes == 1024);
  CHECK(g.last_bytes == 4 * 1024);
  CHECK(count(r, FindingKind::Growth) == 1);
  CHECK(count(r, FindingKind::Leak) == 1);
}

TEST_CASE("broadcast: the seed's (100) - (100,1) is flagged with shapes, factor and bytes", "[analysis]") {
  TraceBuilder t("broadcast");
  auto loss = t.site(31, "linear_regression.cpp"), small = t.site(40), mm = t.site(50);
  for (int i = 0; i < 3; ++i) t.op("sub", {{100}, {100, 1}}, {100, 100}, 40000, loss, true);
  t.op("add", {{10}, {10, 1}}, {10, 10}, 400, small, true);           // below the 4 KiB floor
  t.op("mm", {{256, 64}, {64, 256}}, {256, 256}, 262144, mm, false);  // larger, but no broadcast
  t.op("add", {{1000, 1000}, {1}}, {1000, 1000}, 4000000, mm, true);  // claim 6: factor 1
  Report r = analyze(t.read());
  CHECK(r.broadcast.broadcast_ops == 5);
  REQUIRE(r.broadcast.findings.size() == 1);
  const BroadcastFinding& f = r.broadcast.findings[0];
  CHECK(r.site(f.site).location == "linear_regression.cpp:31");
  CHECK(f.op == "sub");
  CHECK(shape_text(f.inputs[0]) == "[100]");
  CHECK(shape_text(f.inputs[1]) == "[100, 1]");
  CHECK(shape_text(f.output) == "[100, 100]");
  CHECK(f.factor == 100.0);
  CHECK(f.bytes == 40000);
  CHECK(f.count == 3);
  REQUIRE(count(r, FindingKind::Broadcast) == 1);
  CHECK(r.findings[0].message ==
        "sub: [100] and [100, 1] broadcast to [100, 100], 100x the largest input: 39.06 KiB each, 3 times");
}

TEST_CASE("broadcast: a copy of an expanded storage larger than its block is a materialised expand", "[analysis]") {
  TraceBuilder t("expand");
  auto s = t.site(12);
  t.segment(kSeg, 2 * kMiB);
  t.alloc(kSeg, 4096, s, 77);
  t.view(77, ViewKind::Expand, s);
  t.alloc(kSeg + 65536, 65536, s, 78);
  t.copy(1, kSeg, 1, kSeg + 65536, 65536, CopyReason::Contiguous, s);
  Report r = analyze(t.read());
  REQUIRE(r.broadcast.materialized.size() == 1);
  CHECK(r.broadcast.materialized[0].bytes == 65536);
  CHECK(r.broadcast.materialized[0].source_bytes == 4096);
  CHECK(count(r, FindingKind::MaterializedExpand) == 1);
}

TEST_CASE("contiguity: layout copies by site with the views that made the input non-contiguous", "[analysis]") {
  TraceBuilder t("contiguity");
  auto s = t.site(61), cast = t.site(70);
  t.segment(kSeg, 2 * kMiB);
  t.alloc(kSeg, 65536, s, 5);
  t.view(5, ViewKind::Transpose, s);
  t.view(5, ViewKind::Reshape, s);  // renames dims only: not in the chain
  t.view(5, ViewKind::Narrow, s);
  for (int i = 0; i < 4; ++i) t.copy(1, kSeg, 1, kSeg + kMiB, 65536, CopyReason::Contiguous, s);
  t.alloc(kSeg + 131072, 4096, cast, 6);
  t.copy(1, kSeg + 131072, 1, kSeg + kMiB, 8192, CopyReason::OpInternal, cast);  // an op's copy, no view: not layout
  // A conversion to another dtype of the sliced storage, in every step: not layout either.
  for (int i = 0; i < 3; ++i) {
    t.copy(1, kSeg, 1, kSeg + kMiB, 65536, CopyReason::Cast, cast);
    t.step();
  }
  Report r = analyze(t.read());
  REQUIRE(r.contiguity.copies.size() == 1);
  const LayoutCopy& c = r.contiguity.copies[0];
  CHECK(r.site(c.site).location == "model.cpp:61");
  CHECK(c.reason == CopyReason::Contiguous);
  CHECK(c.count == 4);
  CHECK(c.bytes == 4 * 65536);
  CHECK(c.view_chain == "transpose -> narrow");
  CHECK(r.contiguity.bytes == 4 * 65536);
}

TEST_CASE("growth: one per-step tensor that grows with its inputs is not growth; survivors that pile up are", "[analysis]") {
  TraceBuilder t("growth-inputs");
  auto batch = t.site(30), kept = t.site(31);
  t.segment(kSeg, 8 * kMiB);
  t.step();
  std::uint64_t previous = 0;
  for (int i = 1; i <= 6; ++i) {
    // Length-sorted batches: each step's activations are larger, and replace the last step's.
    if (previous) t.free(kSeg, previous);
    previous = static_cast<std::uint64_t>(i) * 65536;
    t.alloc(kSeg, previous, batch);
    t.alloc(kSeg + 4 * kMiB + static_cast<std::uint64_t>(i) * 4096, 4096, kept);  // a true leak beside it
    t.step();
  }
  Report r = analyze(t.read());
  REQUIRE(r.leaks.growth.size() == 1);
  CHECK(r.site(r.leaks.growth[0].site).location == "model.cpp:31");
  CHECK(r.leaks.growth[0].bytes_per_step == 4096.0);
  for (const Finding& f : r.findings)
    if (f.kind == FindingKind::Growth) CHECK(r.site(f.site).location == "model.cpp:31");
}

TEST_CASE("contiguity: a conversion done once at set-up is listed, not a finding; one made every step is", "[analysis]") {
  TraceBuilder t("contiguity-steps");
  auto setup = t.site(20), loop = t.site(40);
  t.segment(kSeg, 2 * kMiB);
  t.alloc(kSeg, 65536, setup, 5);
  t.view(5, ViewKind::Transpose, setup);
  t.alloc(kSeg + 65536, 65536, setup, 6);
  t.copy(1, kSeg, 1, kSeg + 65536, 65536, CopyReason::Contiguous, setup);  // once, before the loop
  for (int step = 0; step < 4; ++step) {
    // Every step: a fresh 64 KiB buffer at the loop's line, filled by a layout copy, freed.
    t.alloc(kSeg + 2 * 65536, 65536, loop, 10 + static_cast<std::uint64_t>(step));
    t.copy(1, kSeg, 1, kSeg + 2 * 65536, 65536, CopyReason::Contiguous, loop);
    t.free(kSeg + 2 * 65536, 65536);
    t.step();
  }
  Report r = analyze(t.read());
  REQUIRE(r.contiguity.copies.size() == 2);
  for (const LayoutCopy& c : r.contiguity.copies) {
    bool at_loop = r.site(c.site).location == "model.cpp:40";
    INFO(r.site(c.site).location);
    CHECK(c.steps == (at_loop ? 4u : 1u));
    CHECK(c.repeated == at_loop);
  }
  // One verdict per line: the loop's copy is a layout_copy finding, and not churn too.
  REQUIRE(count(r, FindingKind::LayoutCopy) == 1);
  CHECK(count(r, FindingKind::Churn) == 0);
  for (const Finding& f : r.findings) CHECK(r.site(f.site).location == "model.cpp:40");
}

TEST_CASE("transfers: per site and step, and the same source sent again every step", "[analysis]") {
  TraceBuilder t("transfers");
  auto loop = t.site(80), once = t.site(70);
  t.alloc(0x5000, 40000, once, 1, TraceBuilder::kCpu);  // the data set, on the host
  t.alloc(0x9000, 400, once, 2, TraceBuilder::kCpu);
  t.copy(0, 0x9000, 1, kSeg, 400, CopyReason::ToDevice, once);
  t.step();
  for (int i = 0; i < 3; ++i) {
    t.copy(0, 0x5000, 1, kSeg + kMiB, 40000, CopyReason::ToDevice, loop);
    t.step();
  }
  Report r = analyze(t.read());
  CHECK(r.transfers.count == 4);
  CHECK(r.transfers.bytes == 120400);
  REQUIRE(r.transfers.sites.size() == 2);
  CHECK(r.site(r.transfers.sites[0].site).location == "model.cpp:80");
  CHECK(r.transfers.sites[0].from == "cpu");
  CHECK(r.transfers.sites[0].to == "sim:0");
  CHECK(r.transfers.sites[0].steps == 3);
  REQUIRE(r.transfers.per_step.size() == 4);
  CHECK(r.transfers.per_step[1].bytes == 40000);
  REQUIRE(r.transfers.resent.size() == 1);
  CHECK(r.site(r.transfers.resent[0].site).location == "model.cpp:80");
  CHECK(r.transfers.resent[0].sources == 1);
  CHECK(r.transfers.resent[0].times == 3);
  CHECK(r.transfers.resent[0].steps == 3);
  CHECK(count(r, FindingKind::ResentTransfer) == 1);
  for (const Finding& f : r.findings)
    if (f.kind == FindingKind::ResentTransfer) CHECK(f.advice == "move the data to the device once, before the loop");
}

TEST_CASE("transfers: data that cannot fit on the device beside the peak is not advised onto it", "[analysis]") {
  // Two halves of a 1.25 GiB host data set sent every step to a 1 GiB device: moving the
  // data there once is impossible, so the advice is to stream it.
  TraceBuilder t("transfers-too-big");
  auto loop = t.site(80), once = t.site(70);
  const std::uint64_t half = 640 * kMiB;
  t.alloc(0x10000000, 2 * half, once, 1, TraceBuilder::kCpu);
  t.segment(kSeg, 2 * kMiB);
  t.alloc(kSeg, kMiB, once, 2);  // the device's peak: 1 MiB
  t.step();
  for (int i = 0; i < 3; ++i) {
    t.copy(0, 0x10000000, 1, kSeg, half, CopyReason::ToDevice, loop);
    t.copy(0, 0x10000000 + half, 1, kSeg, half, CopyReason::ToDevice, loop);
    t.step();
  }
  Report r = analyze(t.read());
  REQUIRE(r.transfers.resent.size() == 1);
  CHECK(r.transfers.resent[0].sources == 2);
  CHECK(r.transfers.resent[0].to == TraceBuilder::kSim);
  std::string advice;
  for (const Finding& f : r.findings)
    if (f.kind == FindingKind::ResentTransfer) advice = f.advice;
  CHECK(advice ==
        "the data (1.25 GiB) does not fit on sim:0 beside the run's peak (1.00 MiB of 1.00 GiB): stream it from pinned "
        "memory with non_blocking copies, so they overlap the compute");
}

TEST_CASE("transfers: a staging buffer refilled before every send sends new data, not the same again", "[analysis]") {
  TraceBuilder t("transfers-staging");
  auto fill = t.site(60), send = t.site(61);
  t.alloc(0x5000, 400000, fill, 1, TraceBuilder::kCpu);  // the data set, on the host
  t.alloc(0x90000, 4000, fill, 2, TraceBuilder::kCpu);   // one staging buffer, reused
  t.step();
  for (int i = 0; i < 4; ++i) {
    // copy_ of the next batch into the staging buffer, then the staging buffer to the device
    t.copy(0, 0x5000 + static_cast<std::uint64_t>(i) * 4000, 0, 0x90000, 4000, CopyReason::Copy, fill);
    t.copy(0, 0x90000, 1, kSeg, 4000, CopyReason::ToDevice, send);
    t.step();
  }
  Report r = analyze(t.read());
  CHECK(r.transfers.count == 4);
  CHECK(r.transfers.resent.empty());
  CHECK(count(r, FindingKind::ResentTransfer) == 0);
}

TEST_CASE("churn: a fresh same-size buffer every step at a site without ops", "[analysis]") {
  TraceBuilder t("churn");
  auto buffer = t.site(90), value = t.site(91);
  t.segment(kSeg, 2 * kMiB);
  t.step();
  for (int i = 0; i < 5; ++i) {
    t.alloc(kSeg, 65536, buffer);
    t.alloc(kSeg + 65536, 65536, value);
    t.op("mul", {{128, 128}, {128, 128}}, {128, 128}, 65536, value, false);
    t.free(kSeg, 65536);
    t.free(kSeg + 65536, 65536);
    t.step();
  }
  Report r = analyze(t.read());
  REQUIRE(r.churn.findings.size() == 1);
  CHECK(r.site(r.churn.findings[0].site).location == "model.cpp:90");
  CHECK(r.churn.findings[0].size == 65536);
  CHECK(r.churn.findings[0].allocs == 5);
  CHECK(r.churn.findings[0].steps == 5);
  CHECK(r.churn.temporary_count == 10);
  CHECK(r.churn.temporary_bytes == 10 * 65536);
}

TEST_CASE("fragmentation: the largest free block between blocks, and OOMs", "[analysis]") {
  TraceBuilder t("fragmentation");
  auto s = t.site(100);
  t.segment(kSeg, 2 * kMiB);
  t.alloc(kSeg, 512 * 1024, s);
  t.alloc(kSeg + 768 * 1024, 512 * 1024, s);  // leaves a 256 KiB hole, then 768 KiB at the end
  t.alloc(kSeg + 1536 * 1024, 512 * 1024, s);
  t.free(kSeg + 768 * 1024, 512 * 1024);  // the hole is now 1 MiB
  t.oom(4 * kMiB, 0, 2 * kMiB, kMiB, s);
  Report r = analyze(t.read());
  REQUIRE(r.fragmentation.ooms.size() == 1);
  CHECK(r.fragmentation.ooms[0].requested == 4 * kMiB);
  CHECK(r.fragmentation.ooms[0].largest_free_block == kMiB);  // 512 KiB to 1.5 MiB
  const DeviceReport& d = sim(r);
  CHECK(d.ooms == 1);
  CHECK(d.peak_allocated.largest_free_block == 256 * 1024);
  CHECK(count(r, FindingKind::Oom) == 1);
  REQUIRE(r.fragmentation.points.size() == 3);
  CHECK(r.fragmentation.points[1].when == "oom");
  CHECK(r.fragmentation.points[2].when == "end");
  CHECK(r.fragmentation.points[2].reserved_over_allocated == 2.0);
}

TEST_CASE("timeline: at most N buckets, whose maxima keep the peak", "[analysis]") {
  TraceBuilder t("timeline");
  auto s = t.site(1);
  t.segment(kSeg, 2 * kMiB);
  for (int i = 0; i < 2000; ++i) {
    t.alloc(kSeg, 4096 * static_cast<std::uint64_t>(1 + i % 7), s);
    t.free(kSeg, 4096 * static_cast<std::uint64_t>(1 + i % 7));
  }
  AnalysisOptions o;
  o.timeline_buckets = 64;
  Report r = analyze(t.read(), o);
  REQUIRE(r.timeline.series.size() == 1);
  const TimelineSeries& ts = r.timeline.series[0];
  CHECK(ts.buckets.size() <= 64);
  CHECK(ts.buckets.size() >= 32);
  std::uint64_t top = 0;
  for (const auto& b : ts.buckets) top = std::max(top, b.allocated_max);
  CHECK(top == 7 * 4096);
  CHECK(ts.buckets.back().allocated_last == 0);
  CHECK(ts.buckets.back().reserved_max == 2 * kMiB);
  REQUIRE(ts.top_sites.size() == 1);
  CHECK(r.site(ts.top_sites[0]).location == "model.cpp:1");
  std::uint64_t site_top = 0;
  for (const auto& b : ts.buckets) site_top = std::max(site_top, b.site_last[0]);
  CHECK(site_top > 0);
  CHECK(site_top <= 7 * 4096);
  CHECK(ts.buckets.back().site_last[0] == 0);
}

TEST_CASE("check: limits pass and fail with the figure, the excess and the sites", "[analysis]") {
  TraceBuilder t("check");
  auto big = t.site(7);
  t.segment(kSeg, 2 * kMiB);
  t.alloc(kSeg, kMiB + kMiB / 10, big);
  Report r = analyze(t.read());
  CheckLimits l;
  l.max_peak = kMiB;
  l.max_reserved = 4 * kMiB;
  auto v = run_checks(r, l);
  REQUIRE(v.size() == 2);
  CHECK_FALSE(v[0].passed);
  CHECK(v[0].message == "peak allocated on sim:0 is 1.10 MiB, 102.40 KiB (10.0%) over the limit of 1.00 MiB");
  REQUIRE(v[0].details.size() == 1);
  CHECK(v[0].details[0] == "1.10 MiB at model.cpp:7");
  CHECK(v[1].passed);

  SECTION("a 10% larger peak fails a 5% tolerance and passes a 15% one") {
    Baseline base;
    base.device = "sim:0";
    base.peak_allocated = kMiB;
    base.peak_reserved = 2 * kMiB;
    CheckLimits b;
    b.baseline = base;
    b.tolerance = parse_tolerance("5%");
    auto bv = run_checks(r, b);
    REQUIRE(bv.size() == 3);
    CHECK(bv[0].name == "baseline-peak");
    CHECK_FALSE(bv[0].passed);
    CHECK(bv[0].message ==
          "peak allocated on sim:0 is 1.10 MiB against a baseline of 1.00 MiB: 102.40 KiB (10.0%) more, beyond the tolerance of "
          "5%");
    CHECK(bv[1].passed);
    b.tolerance = parse_tolerance("15%");
    CHECK(run_checks(r, b)[0].passed);
  }
  SECTION("JUnit XML: one testcase per check, failures with message") {
    std::string xml = junit_xml("t.memtrace", v);
    CHECK(xml.find("<testsuites name=\"memlens check\" tests=\"2\" failures=\"1\">") != std::string::npos);
    CHECK(xml.find("<testcase classname=\"memlens.check\" name=\"max-reserved\"/>") != std::string::npos);
    CHECK(xml.find("<failure message=\"peak allocated on sim:0 is 1.10 MiB, 102.40 KiB (10.0%) over the limit of 1.00 MiB\" "
                   "type=\"memory\">") != std::string::npos);
  }
  SECTION("baselines round-trip; bad ones are refused in one line") {
    Baseline b = make_baseline(r);
    Baseline back = parse_baseline(baseline_json(b), "base.json");
    CHECK(back.peak_allocated == kMiB + kMiB / 10);
    CHECK(back.device == "sim:0");
    CHECK_THROWS_WITH(parse_baseline("{", "base.json"), "base.json: not a memlens baseline: not valid JSON");
    CHECK_THROWS_WITH(parse_baseline("{\"a\":1}", "base.json"), "base.json: not a memlens baseline: no \"memlens_baseline\" key");
    CHECK_THROWS_WITH(parse_tolerance("5 percent"), "invalid tolerance '5 percent' (expected e.g. 5% or 0.05, from 0 to 10000%)");
  }
  SECTION("a gate that cannot be fooled: no NaN tolerance, no impossible baseline figure") {
    for (const char* bad : {"nan", "NaN%", "inf", "-5%", "1e400", "0x10", " 5%", "20000%"})
      CHECK_THROWS_WITH(parse_tolerance(bad),
                        std::string("invalid tolerance '") + bad + "' (expected e.g. 5% or 0.05, from 0 to 10000%)");
    CHECK(parse_tolerance("0") == 0);
    CHECK(parse_tolerance("12.5%") == Approx(0.125));
    auto with_peak = [](const char* peak) {
      return std::string("{\"memlens_baseline\":1,\"device\":\"sim:0\",\"peak_allocated\":") + peak +
             ",\"peak_reserved\":0,\"leaked_bytes\":0}";
    };
    CHECK(parse_baseline(with_peak("4096"), "b.json").peak_allocated == 4096);
    CHECK_THROWS_WITH(parse_baseline(with_peak("-5"), "b.json"),
                      "b.json: not a memlens baseline: \"peak_allocated\" is -5, not a whole number of bytes from 0 to 2^62");
    CHECK_THROWS_WITH(parse_baseline(with_peak("1e300"), "b.json"),
                      "b.json: not a memlens baseline: \"peak_allocated\" is 1e+300, not a whole number of bytes from 0 to 2^62");
    CHECK_THROWS_WITH(parse_baseline(with_peak("1.5"), "b.json"),
                      "b.json: not a memlens baseline: \"peak_allocated\" is 1.5, not a whole number of bytes from 0 to 2^62");
    CHECK_THROWS_WITH(
        parse_baseline(with_peak("18446744073709551615"), "b.json"),
        "b.json: not a memlens baseline: \"peak_allocated\" is 18446744073709551615, not a whole number of bytes from 0 to 2^62");
  }
}

TEST_CASE("diff: peaks, sites that appeared and vanished", "[analysis]") {
  TraceBuilder ta("diff-a"), tb("diff-b");
  ta.segment(kSeg, 2 * kMiB);
  ta.alloc(kSeg, kMiB, ta.site(1));
  ta.alloc(kSeg + kMiB, 4096, ta.site(2));
  tb.segment(kSeg, 2 * kMiB);
  tb.alloc(kSeg, kMiB + 65536, tb.site(1));
  tb.alloc(kSeg + 2 * kMiB, 8192, tb.site(3));
  Report a = analyze(ta.read()), b = analyze(tb.read());
  ReportDiff d = diff_reports(a, b);
  REQUIRE(d.peak_allocated.size() == 1);
  CHECK(d.peak_allocated[0].delta() == 65536 + 8192 - 4096);
  CHECK(d.new_sites == std::vector<std::string>{"model.cpp:3"});
  CHECK(d.vanished_sites == std::vector<std::string>{"model.cpp:2"});
  auto j = nlohmann::json::parse(render_diff(d, "json", {}));
  CHECK(j["new_sites"][0] == "model.cpp:3");
}

TEST_CASE("render: JSON has a schema version and every section; text fits 100 columns", "[analysis]") {
  TraceBuilder t("render");
  auto loss = t.site(31, "/a/very/long/path/to/some/project/directory/src/training/linear_regression_with_long_name.cpp");
  t.op("sub", {{100}, {100, 1}}, {100, 100}, 40000, loss, true);
  Report r = analyze(t.read());
  r.path = "render.memtrace";
  auto j = nlohmann::json::parse(render_json({r}, {}));
  CHECK(j["schema_version"] == kReportSchemaVersion);
  CHECK(j["traces"][0]["findings"][0]["kind"] == "broadcast");
  CHECK(j["traces"][0]["broadcast"]["findings"][0]["output"] == nlohmann::json::array({100, 100}));
  for (const char* key : {"leaks", "broadcast", "contiguity", "transfers", "churn", "fragmentation", "timeline"})
    CHECK(j["traces"][0].contains(key));
  std::string text = render_text({r}, {});
  std::size_t at = 0, widest = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    std::string line = text.substr(at, end - at);
    widest = std::max<std::size_t>(
        widest, static_cast<std::size_t>(std::count_if(line.begin(), line.end(), [](char c) { return (c & 0xc0) != 0x80; })));
    at = end + 1;
  }
  CHECK(widest <= 100);
  RenderOptions only;
  only.sections = {Section::Leaks};
  auto lj = nlohmann::json::parse(render_json({r}, only));
  CHECK_FALSE(lj["traces"][0].contains("broadcast"));
  CHECK(lj["traces"][0]["findings"].size() == 1);  // a section alone lists every finding
}

TEST_CASE("memory_at: segments and their live blocks at a moment, with the views of each storage", "[analysis]") {
  TraceBuilder t("memory-at");
  auto s = t.site(5);
  t.segment(kSeg, 2 * kMiB);
  t.alloc(kSeg, 4096, s, 11);  // t = 1000
  t.view(11, ViewKind::Transpose, s);
  t.alloc(kSeg + 8192, 65536, s, 12);  // t = 3000
  t.category(12, Category::Activation);
  t.free(kSeg, 4096);  // t = 5000
  memlens::profiler::TraceReader r = t.read();
  MemoryAt before = memory_at(r, 4500);
  REQUIRE(before.devices.size() == 1);
  const DeviceAt& d = before.devices[0];
  CHECK(d.name == "sim:0");
  CHECK(d.allocated == 4096 + 65536);
  REQUIRE(d.segments.size() == 1);
  REQUIRE(d.segments[0].blocks.size() == 2);
  CHECK(d.segments[0].blocks[0].views.size() == 1);
  CHECK(d.segments[0].blocks[0].views[0].kind == ViewKind::Transpose);
  CHECK(d.segments[0].blocks[1].category == Category::Activation);
  CHECK(before.sites[d.segments[0].blocks[1].site].location == "model.cpp:5");
  CHECK(d.largest_free_block == 2 * kMiB - 8192 - 65536);
  MemoryAt after = memory_at(r, 5000);
  CHECK(after.devices[0].segments[0].blocks.size() == 1);
  CHECK(after.devices[0].allocated == 65536);
}

TEST_CASE("memory_at from checkpoints: the same state as a replay from the start, in any order", "[analysis]") {
  TraceBuilder t("memory-at-index", 16);  // 16 events a chunk: many chunk boundaries
  auto s = t.site(7);
  t.segment(kSeg, 64 * kMiB);
  // 600 blocks of growing sizes, each freed 50 blocks later; a view on every tenth.
  for (std::uint64_t i = 0; i < 600; ++i) {
    t.alloc(kSeg + i * 65536, 512 * (i % 97 + 1), s, 1000 + i);
    if (i % 10 == 0) t.view(1000 + i, ViewKind::Narrow, s);
    if (i >= 50) t.free(kSeg + (i - 50) * 65536, 512 * ((i - 50) % 97 + 1));
  }
  memlens::profiler::TraceReader r = t.read();
  REQUIRE(r.chunks().size() > 50);
  MemoryAtIndex index(r, 64);  // a checkpoint every 64 events passed
  auto same = [](const MemoryAt& a, const MemoryAt& b) {
    REQUIRE(a.devices.size() == b.devices.size());
    for (std::size_t d = 0; d < a.devices.size(); ++d) {
      CHECK(a.devices[d].allocated == b.devices[d].allocated);
      CHECK(a.devices[d].largest_free_block == b.devices[d].largest_free_block);
      REQUIRE(a.devices[d].segments.size() == b.devices[d].segments.size());
      const auto& x = a.devices[d].segments[0].blocks;
      const auto& y = b.devices[d].segments[0].blocks;
      REQUIRE(x.size() == y.size());
      for (std::size_t i = 0; i < x.size(); ++i) {
        CHECK(x[i].address == y[i].address);
        CHECK(x[i].views.size() == y[i].views.size());
        CHECK(a.sites[x[i].site].location == b.sites[y[i].site].location);
      }
    }
  };
  const std::uint64_t end = 1211 * 1000;  // 1,211 events, 1 µs apart: past the last one
  for (std::uint64_t at : std::vector<std::uint64_t>{end, 100'000, 700'000, 3'000, end / 2, end})
    same(index.at(at), memory_at(r, at));
  CHECK(index.checkpoints() > 5);
  CHECK(index.checkpoints() <= 64);
  MemoryAt last = index.at(end);
  CHECK(last.devices[0].segments[0].blocks.size() == 50);  // the 50 not yet freed
}

TEST_CASE("a block of 2^64-1 bytes is reported, not a crash: the timeline's bars in floating point", "[hostile]") {
  // A hostile trace's sizes are any 64-bit number: 8 * m and top + 1 overflowed (SIGFPE).
  TraceBuilder t("huge-block");
  auto site = t.site(12);
  t.segment(0x1000, UINT64_MAX);
  t.alloc(0x1000, UINT64_MAX, site);
  t.free(0x1000, UINT64_MAX);
  Report r = analyze(t.read());
  RenderOptions timeline;
  timeline.sections = {Section::Timeline};
  std::string text;
  REQUIRE_NOTHROW(text = render_text({r}, timeline));
  CHECK_THAT(text, Catch::Contains("sim:0 allocated, 0 to 16777216.00 TiB: "));
  CHECK_THAT(text, Catch::Contains("█"));  // the block's bucket is the highest
}

TEST_CASE("a block replaced at its address without a free: a later role for the old storage changes nothing", "[hostile]") {
  // Storage 1's free was lost; storage 2 took its address, then was freed. A category event
  // naming storage 1 then found no block (absl's btree_map::at threw).
  TraceBuilder t("replaced-block");
  auto site = t.site(3);
  t.segment(0x1000, 1 << 20);
  t.alloc(0x1000, 4096, site, 1);
  t.alloc(0x1000, 8192, site, 2);
  t.category(2, Category::Activation);
  t.free(0x1000, 8192);
  t.category(1, Category::Parameter);
  t.alloc(0x1000, 512, site, 3);
  t.category(1, Category::Gradient);  // names no block: storage 3 keeps its role
  Report r;
  REQUIRE_NOTHROW(r = analyze(t.read()));
  REQUIRE(r.devices.size() == 1);
  CHECK(r.devices[0].peak_allocated.allocated == 8192);
  CHECK(r.devices[0].final_allocated == 512);
  const auto& at_peak = r.devices[0].peak_allocated.by_category;
  REQUIRE(at_peak.size() == 1);
  CHECK(at_peak[0].category == Category::Activation);
  REQUIRE(r.leaks.alive_at_end.size() == 1);
  CHECK(r.leaks.alive_at_end[0].category == Category::Unknown);
  CHECK(r.leaks.alive_at_end[0].bytes == 512);
}
