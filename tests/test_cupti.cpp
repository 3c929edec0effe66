// The CUPTI collector's translation of activity records and its trace, on synthetic records: no GPU
// is needed. (The collector itself runs on the lent GPU machine: scripts/gpu/run.sh.)
#include <catch2/catch.hpp>
#include <cstring>
#include <memlens/analysis/analyze.hpp>
#include <memlens/trace/trace_writer.hpp>

#include "activity_translation.hpp"
#include "collector_trace.hpp"

using namespace memlens;
using namespace memlens::cupti;
using profiler::EventKind;

namespace {

CUpti_ActivityMemory4 memory(CUpti_ActivityMemoryOperationType op, std::uint64_t address, std::uint64_t bytes, std::uint64_t time,
                             std::uint32_t device = 0) {
  CUpti_ActivityMemory4 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  m.memoryOperationType = op;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.address = address;
  m.bytes = bytes;
  m.timestamp = time;
  m.deviceId = device;
  m.streamId = 7;
  return m;
}

std::vector<profiler::Event> translated(const void* record) {
  std::vector<profiler::Event> out;
  translate(static_cast<const CUpti_Activity*>(record), TranslatedNames{42}, out);
  return out;
}

}  // namespace

TEST_CASE("cupti: cudaMalloc and cudaFree become segment events on cuda:N", "[cupti]") {
  auto a = memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x7f0000000000, 2 << 20, 1000, 1);
  auto e = translated(&a);
  REQUIRE(e.size() == 1);
  CHECK(e[0].kind == EventKind::SegmentAlloc);
  CHECK(e[0].device == 3);  // cuda:1
  CHECK(trace_devices()[3].name == "cuda:1");
  CHECK(e[0].segment.address == 0x7f0000000000);
  CHECK(e[0].segment.size == 2 << 20);
  CHECK(e[0].segment.stream == 7);
  CHECK(e[0].time_ns == 1000);
  auto f = memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 0x7f0000000000, 2 << 20, 2000, 1);
  CHECK(translated(&f)[0].kind == EventKind::SegmentFree);
}

TEST_CASE("cupti: pool allocations are blocks of their pool; pools are segments", "[cupti]") {
  auto a = memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x7f0000100000, 4096, 1000);
  a.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  a.memoryPoolConfig.address = 0x7f0000000000;
  auto e = translated(&a);
  REQUIRE(e.size() == 1);
  CHECK(e[0].kind == EventKind::Alloc);
  CHECK(e[0].alloc.segment == 0x7f0000000000);
  CHECK(e[0].alloc.requested == 4096);

  CUpti_ActivityMemoryPool3 p;
  std::memset(&p, 0, sizeof p);
  p.kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL;
  p.memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED;
  p.address = 0x7f0000000000;
  p.size = 32 << 20;
  p.timestamp = 500;
  auto pe = translated(&p);
  REQUIRE(pe.size() == 1);
  CHECK(pe[0].kind == EventKind::SegmentAlloc);
  CHECK(pe[0].segment.size == 32 << 20);
  p.memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED;
  CHECK(translated(&p).empty());
}

TEST_CASE("cupti: copies know their direction; memsets are ops", "[cupti]") {
  CUpti_ActivityMemcpy6 c;
  std::memset(&c, 0, sizeof c);
  c.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  c.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  c.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  c.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  c.bytes = 65536;
  c.start = 3000;
  auto e = translated(&c);
  REQUIRE(e.size() == 1);
  CHECK(e[0].kind == EventKind::Copy);
  CHECK(e[0].copy.src_device == 0);  // from the host
  CHECK(e[0].device == 2);           // to cuda:0
  CHECK(e[0].copy.reason == profiler::CopyReason::ToDevice);
  CHECK(e[0].copy.bytes == 65536);

  CUpti_ActivityMemset4 s;
  std::memset(&s, 0, sizeof s);
  s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  s.bytes = 1024;
  s.start = 10, s.end = 25;
  auto m = translated(&s);
  REQUIRE(m.size() == 1);
  CHECK(m[0].kind == EventKind::Op);
  CHECK(m[0].op.name == 42);
  CHECK(m[0].op.duration_ns == 15);

  CUpti_Activity other{};
  other.kind = CUPTI_ACTIVITY_KIND_KERNEL;
  CHECK(translated(&other).empty());
}

TEST_CASE("cupti: a translated trace reads back and reports its segments", "[cupti]") {
  std::string path = "/tmp/memlens-cupti-test-" + std::to_string(::getpid()) + ".memtrace";
  {
    profiler::TraceHeader h;
    h.program = "synthetic CUDA program";
    h.devices = trace_devices();
    profiler::TraceWriter w(path, h);
    std::vector<profiler::Event> events;
    auto a = memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x7f0000000000, 20 << 20, 1000);
    auto b = memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x7f0002000000, 2 << 20, 2000);
    auto f = memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 0x7f0002000000, 2 << 20, 3000);
    for (const void* r : {static_cast<const void*>(&a), static_cast<const void*>(&b), static_cast<const void*>(&f)})
      translate(static_cast<const CUpti_Activity*>(r), {}, events);
    for (const auto& e : events) w.write(e);
    w.close();
  }
  profiler::TraceReader reader(path);
  analysis::Report r = analysis::analyze(reader);
  const analysis::DeviceReport* d = r.device("cuda:0");
  REQUIRE(d != nullptr);
  CHECK(d->peak_reserved.reserved == 22 << 20);
  CHECK(d->final_reserved == 20 << 20);
  CHECK(d->segment_allocs == 2);
  CHECK(d->segment_frees == 1);
  std::remove(path.c_str());
}

TEST_CASE("cupti: activity CUPTI delivers after the trace is closed is dropped and counted", "[cupti]") {
  // As frees in static destructors arrive after the collector's exit handler closed the
  // file: writing them would throw inside a CUPTI callback and end the program.
  std::string path = "/tmp/memlens-cupti-late-" + std::to_string(::getpid()) + ".memtrace";
  profiler::TraceHeader h;
  h.program = "synthetic CUDA program";
  h.devices = trace_devices();
  CollectorTrace trace(std::make_unique<profiler::TraceWriter>(path, h));
  auto a = memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x7f0000000000, 4 << 20, 1000);
  auto f = memory(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 0x7f0000000000, 4 << 20, 2000);
  trace.write(translated(&a));
  trace.flush();
  trace.close();
  trace.close();  // idempotent, as the exit handler and a second stop may both call it
  CHECK_NOTHROW(trace.write(translated(&f)));
  CHECK_NOTHROW(trace.write(translated(&f)));
  CHECK_NOTHROW(trace.flush());
  CHECK(trace.dropped() == 2);
  profiler::TraceReader reader(path);
  CHECK(reader.has_footer());
  CHECK(reader.problem().empty());
  CHECK(reader.totals().events == 1);  // the allocation; the late free is not in the file
  std::remove(path.c_str());
}
