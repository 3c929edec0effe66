// The .memtrace file: round trip, chunks, recovery after truncation, bad input.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memlens/trace/trace_reader.hpp>
#include <memlens/trace/trace_writer.hpp>
#include <random>
#include <sstream>

using namespace memlens::profiler;

namespace {

std::string temp_path(const std::string& name) {
  return "/tmp/memlens-test-" + std::to_string(::getpid()) + "-" + name + ".memtrace";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

TraceHeader sample_header() {
  TraceHeader h;
  h.program = "test_trace_file";
  h.pid = 4242;
  h.start_unix_ns = 1764633600000000000;
  h.devices = {{"cpu", 0}, {"sim:0", std::uint64_t{16} << 30}};
  h.allocator_config = "roundup_power2_divisions:0,expandable_segments:False";
  h.notes = "cuda served by sim";
  return h;
}

ShapeRecord shape(std::initializer_list<std::int64_t> dims) {
  ShapeRecord r;
  for (auto d : dims) r.dims[r.ndim++] = d;
  return r;
}

// One event of every kind, each field set to something recognisable.
std::vector<Event> one_of_each(std::uint32_t site) {
  std::vector<Event> v;
  std::uint64_t t = 1000;
  auto add = [&](EventKind k, const auto& fields) {
    Event e(k, fields);
    e.time_ns = t += 37;
    e.thread = static_cast<std::uint32_t>(v.size() % 3);
    e.device = 1;
    v.push_back(e);
  };
  add(EventKind::SegmentAlloc, SegmentEvent{.address = 0x7f0000000000, .size = 2 << 20, .stream = 2, .pool = Pool::Small});
  add(EventKind::Alloc, AllocEvent{.address = 0x7f0000000200,
                                   .segment = 0x7f0000000000,
                                   .size = 512,
                                   .requested = 400,
                                   .storage = 17,
                                   .stream = 2,
                                   .category = Category::Activation,
                                   .site = site,
                                   .stack = 0});
  ViewEvent view{.tensor = 99,
                 .storage = 17,
                 .offset = -0,
                 .view = ViewKind::Transpose,
                 .dtype = memlens::kFloat64,
                 .site = site,
                 .sizes = shape({3, 2}),
                 .strides = shape({1, 3})};
  add(EventKind::View, view);
  add(EventKind::Copy, CopyEvent{.dst_address = 0x7f0000000400,
                                 .src_address = 0x5555000010,
                                 .bytes = 4096,
                                 .src_device = 0,
                                 .reason = CopyReason::ToDevice,
                                 .site = site});
  OpEvent op{.name = 1,
             .site = site,
             .bytes = 40000,
             .duration_ns = 12345,
             .broadcast = true,
             .n_inputs = 2,
             .output = TensorRecord::contiguous(shape({100, 100}), memlens::ScalarType::Float32, 1),
             .inputs = {TensorRecord{shape({100}), shape({2}), memlens::ScalarType::Float64, 0, 21, 7},
                        TensorRecord{shape({100, 1}), shape({1, 0}), memlens::ScalarType::BFloat16, 1, 1ull << 40, -1},
                        {},
                        {}}};
  add(EventKind::Op, op);
  add(EventKind::ScopeBegin, ScopeEvent{2});
  add(EventKind::ScopeEnd, ScopeEvent{2});
  add(EventKind::Step, StepEvent{7});
  // Storage ids are deltas from the previous one: the largest id and back down wrap exactly.
  add(EventKind::Category, CategoryEvent{.storage = ~std::uint64_t{0}, .category = Category::Gradient});
  FailureEvent failure{.size = 1 << 30,
                       .requested = 1000000000,
                       .device_free = 100,
                       .reserved = 2 << 20,
                       .allocated = 512,
                       .largest_free_block = 256,
                       .stream = 0,
                       .site = site,
                       .stack = 0};
  add(EventKind::AllocFailed, failure);
  add(EventKind::Oom, failure);
  add(EventKind::FreeRequested, FreeEvent{.address = 0x7f0000000200, .size = 512, .storage = 17, .stream = 2});
  add(EventKind::FreeCompleted, FreeEvent{.address = 0x7f0000000200, .size = 512, .storage = 17, .stream = 2});
  add(EventKind::SegmentFree, SegmentEvent{.address = 0x7f0000000000, .size = 2 << 20, .stream = 2, .pool = Pool::Small});
  add(EventKind::AllocRetry, RetryEvent{.size = 4 << 20, .requested = 3 << 20, .stream = 2, .pool = Pool::Large, .site = site});
  return v;
}

// Writes `n` alloc events in chunks of `per_chunk`; returns the path.
std::string write_allocs(const std::string& name, int n, std::size_t per_chunk) {
  std::string path = temp_path(name);
  TraceWriter w(path, sample_header(), per_chunk);
  std::uint32_t site = w.intern_site("train.cpp", 10, "main");
  for (int i = 0; i < n; ++i) {
    Event e(EventKind::Alloc, AllocEvent{.address = 0x7f0000000000 + static_cast<std::uint64_t>(i % 64) * 512,
                                         .size = 512,
                                         .requested = 500,
                                         .storage = static_cast<std::uint64_t>(i),
                                         .site = site});
    e.time_ns = 1000 + static_cast<std::uint64_t>(i) * 50;
    w.write(e);
  }
  w.close();
  return path;
}

}  // namespace

TEST_CASE("every event kind round-trips field by field") {
  std::string path = temp_path("roundtrip");
  std::vector<Event> written;
  {
    TraceWriter w(path, sample_header(), 5);
    CHECK(w.intern_string("add") == 1);
    CHECK(w.intern_string("forward") == 2);
    CHECK(w.intern_string("add") == 1);
    std::uint32_t site = w.intern_site("samples/linear_regression.cpp", 31, "main");
    CHECK(w.intern_site("samples/linear_regression.cpp", 31, "main") == site);
    written = one_of_each(site);
    for (auto& e : written) w.write(e);
    w.close();
    CHECK(w.totals().events == written.size());
  }
  TraceReader r(path);
  CHECK(r.header() == sample_header());
  CHECK(r.problem().empty());
  REQUIRE(r.has_footer());
  std::vector<Event> read;
  r.for_each([&](const Event& e) { read.push_back(e); });
  REQUIRE(read.size() == written.size());
  for (std::size_t i = 0; i < read.size(); ++i) {
    INFO("event " << i << " " << kind_name(written[i].kind));
    CHECK(read[i] == written[i]);
  }
  CHECK(r.footer_totals()->events == 15);
  CHECK(*r.footer_totals() == r.totals());
  for (std::size_t k = 1; k <= kEventKindCount; ++k) CHECK(r.totals().by_kind[k] == 1);
  CHECK(r.string(1) == "add");
  CHECK(r.string(2) == "forward");
  CHECK(r.site_location(read[1].site()) == "samples/linear_regression.cpp:31");
  CHECK(r.site(read[1].site()).function == "main");
  CHECK(r.chunks().size() == 3);  // 15 events, 5 per chunk
  CHECK(r.read_chunk(2).size() == 5);
  CHECK(r.read_chunk(1).front() == written[5]);
  CHECK_THROWS_WITH(r.read_chunk(3), "chunk 3 out of range (3 chunks)");
  std::remove(path.c_str());
}

TEST_CASE("events compress to a few bytes each") {
  std::string path = write_allocs("size", 100000, 4096);
  double per_event = static_cast<double>(slurp(path).size()) / 100000;
  CHECK(per_event < 2.0);
  TraceReader r(path);
  CHECK(r.totals().events == 100000);
  std::remove(path.c_str());
}

TEST_CASE("a trace cut at any chunk boundary recovers every whole chunk") {
  std::string path = write_allocs("cut", 100, 10);
  std::string bytes = slurp(path);
  TraceReader whole(path);
  auto chunks = whole.chunks();
  REQUIRE(chunks.size() == 10);
  std::string cut_path = temp_path("cut-copy");
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    spit(cut_path, bytes.substr(0, chunks[i].offset));
    TraceReader r(cut_path);
    INFO("cut before chunk " << i);
    CHECK(r.totals().events == i * 10);
    CHECK_FALSE(r.has_footer());
    CHECK(r.problem() == "the trace ends without a footer (the program stopped before closing it): recovered " +
                             std::to_string(i * 10) + " events from " + std::to_string(i) + " whole event chunk" +
                             (i == 1 ? "" : "s"));
  }
  std::remove(cut_path.c_str());
  std::remove(path.c_str());
}

TEST_CASE("a trace cut at random bytes recovers the whole chunks before the cut") {
  std::string path = write_allocs("random-cut", 200, 16);
  std::string bytes = slurp(path);
  TraceReader whole(path);
  auto chunks = whole.chunks();
  std::string cut_path = temp_path("random-cut-copy");
  std::mt19937 rng(5);
  std::size_t data_start = chunks.front().offset;
  std::uint64_t footer_offset = 0;
  std::memcpy(&footer_offset, bytes.data() + bytes.size() - 16, 8);
  for (int trial = 0; trial < 200; ++trial) {
    std::size_t len = data_start + rng() % (footer_offset - data_start);
    spit(cut_path, bytes.substr(0, len));
    TraceReader r(cut_path);
    std::uint64_t expected = 0;
    for (auto& c : chunks)
      if (c.offset + 32 <= len) {
        // a chunk counts when all of it is before the cut
        std::size_t next = &c == &chunks.back() ? footer_offset : (&c + 1)->offset;
        if (next <= len) expected += c.count;
      }
    INFO("cut at " << len);
    CHECK(r.totals().events == expected);
    CHECK(r.problem().rfind("the trace ends without a footer", 0) == 0);
  }
  std::remove(cut_path.c_str());
  std::remove(path.c_str());
}

TEST_CASE("bad input gives one-line errors") {
  std::string path = temp_path("bad");
  spit(path, "");
  CHECK_THROWS_WITH(TraceReader(path), path + ": empty file, not a memlens trace");
  spit(path, "PK\x03\x04 this is a zip file");
  CHECK_THROWS_WITH(TraceReader(path), path + ": not a memlens trace (bad magic)");
  std::string good = slurp(write_allocs("bad-source", 50, 10));
  std::string future = good;
  future[8] = 9;
  spit(path, future);
  CHECK_THROWS_WITH(TraceReader(path), path + ": trace format version 9 is newer than this memlens reads (8)");
  std::string old = good;
  old[8] = 1;
  spit(path, old);
  CHECK_THROWS_WITH(TraceReader(path), path + ": trace format version 1 is older than this memlens reads (8); record it again");
  std::string header_flip = good;
  header_flip[20] ^= 0x20;
  spit(path, header_flip);
  CHECK_THROWS_WITH(TraceReader(path), path + ": corrupt header (checksum mismatch)");
  spit(path, good.substr(0, 12));
  CHECK_THROWS_WITH(TraceReader(path), path + ": truncated header");
  CHECK_THROWS_WITH(TraceReader("/nonexistent/x.memtrace"), "/nonexistent/x.memtrace: cannot open: No such file or directory");
  // A flipped byte inside the third chunk: the first two are read, the rest reported.
  spit(path, good);
  auto chunks = TraceReader(path).chunks();
  std::string chunk_flip = good;
  chunk_flip[chunks[2].offset + 40] ^= 0x01;
  spit(path, chunk_flip);
  TraceReader r(path);
  CHECK(r.totals().events == 20);
  CHECK(r.problem() == "corrupt chunk at offset " + std::to_string(chunks[2].offset) +
                           " (checksum mismatch); recovered 20 events from 2 whole event chunks before it");
  std::remove(path.c_str());
  std::remove(temp_path("bad-source").c_str());
}

TEST_CASE("the docs list every kind's fields in the codec's order") {
  // docs/trace-format.md: "| 3 `alloc` | address, segment, ... |", one row per struct.
  std::ifstream doc(TRACE_FORMAT_DOC);
  REQUIRE(doc);
  std::map<std::string, std::string> rows;  // kind name -> its fields as written
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("| ", 0) != 0) continue;
    auto bar = line.find(" | ", 2);
    if (bar == std::string::npos) continue;
    std::string kinds = line.substr(2, bar - 2), fields = line.substr(bar + 3);
    fields = fields.substr(0, fields.rfind(" |"));
    for (std::size_t at = 0; (at = kinds.find('`', at)) != std::string::npos;) {
      auto end = kinds.find('`', at + 1);
      rows[kinds.substr(at + 1, end - at - 1)] = fields;
      at = end + 1;
    }
  }
  for (std::size_t k = 1; k <= kEventKindCount; ++k) {
    auto kind = static_cast<EventKind>(k);
    std::string want;
    for (auto name : field_names(kind)) want += (want.empty() ? "" : ", ") + std::string(name);
    INFO(kind_name(kind));
    REQUIRE(rows.count(std::string(kind_name(kind))) == 1);
    CHECK(rows[std::string(kind_name(kind))] == want);
  }
}
