// Traces made to hurt the reader: checksum-valid chunks that lie about their sizes and
// counts, ids past every table, a module path naming a FIFO, a cut trailer. Each must give
// a clear problem and bounded memory, never a crash, a hang or a huge allocation.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <memlens/analysis/analyze.hpp>
#include <memlens/analysis/memory_at.hpp>
#include <memlens/trace/export.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "crafted_trace.hpp"
#include "trace_builder.hpp"

using namespace memlens;
using namespace memlens::test;

namespace {

constexpr std::uint64_t kSeg = 0x7f0000000000, kMiB = 1 << 20;

// 30 allocations in 3 events chunks of 10, with footer and trailer.
std::string three_chunks(TraceBuilder& t) {
  t.writer().flush();
  std::uint32_t site = t.site(7);
  t.segment(kSeg, 2 * kMiB);
  for (int i = 0; i < 29; ++i) {
    t.alloc(kSeg + static_cast<std::uint64_t>(i) * 4096, 4096, site);
    if (i % 10 == 8) t.writer().flush();
  }
  t.read();
  return read_bytes(t.path());
}

std::string at(std::uint64_t offset) { return "offset " + std::to_string(offset); }

}  // namespace

TEST_CASE("a chunk that declares more than it holds is refused before anything is sized by it", "[hostile]") {
  TraceBuilder t("hostile-sizes");
  std::string good = three_chunks(t);
  std::string prefix = before_footer(good);
  const std::uint64_t off = prefix.size();
  std::uint64_t before = peak_rss();

  SECTION("4 GiB declared by a 30-byte payload") {
    write_bytes(t.path(), prefix + chunk_bytes(1, 1, 1, 0, 0xFFFFFFFFu, zstd_of("abcdefgh")));
    profiler::TraceReader r(t.path());
    CHECK(r.problem() == "corrupt chunk at " + at(off) +
                             " (declares 4294967295 bytes, more than a chunk may hold (67108864)); recovered 30 events "
                             "from 3 whole event chunks before it");
  }
  SECTION("4294967295 events in 8 bytes") {
    write_bytes(t.path(), prefix + chunk_bytes(1, 0, 0xFFFFFFFFu, 0, 8, "12345678"));
    profiler::TraceReader r(t.path());
    CHECK(r.problem() ==
          "corrupt chunk at " + at(off) +
              " (declares 4294967295 entries in 8 bytes); recovered 30 events from 3 whole event chunks before it");
    CHECK(r.totals().events == 30);
  }
  SECTION("more events than a chunk may hold, however well they compress") {
    std::string raw(std::size_t{4} << 20, '\x05');  // a million 4-byte events: 4 KiB of zstd
    write_bytes(t.path(), prefix + chunk_bytes(1, 1, 1u << 20, 0, 4u << 20, zstd_of(raw)));
    profiler::TraceReader r(t.path());
    CHECK(r.problem() == "corrupt chunk at " + at(off) +
                             " (declares 1048576 events, more than a chunk may hold (65536)); "
                             "recovered 30 events from 3 whole event chunks before it");
  }
  SECTION("60 MiB declared, 40 bytes really there: found when the pass decodes it") {
    std::string raw(40, '\x05');
    write_bytes(t.path(), prefix + chunk_bytes(1, 1, 10, 0, 60 * kMiB, zstd_of(raw)));
    profiler::TraceReader r(t.path());
    analysis::Report rep = analysis::analyze(r);
    CHECK(rep.events == 30);
    CHECK(rep.problem == "corrupt chunk at " + at(off) +
                             " (zstd: 40 bytes where the chunk declares 62914560); read 30 events "
                             "from 3 whole event chunks before it");
    CHECK(r.chunks().size() == 3);  // later passes stop there too, without decoding it again
    CHECK(r.read_chunk(2).size() == 10);
    CHECK_THROWS_WITH(r.read_chunk(3), "chunk 3 out of range (3 chunks)");
  }
  SECTION("a string table entry longer than its chunk") {
    std::string raw;
    raw += '\x01';          // first id
    raw += "\xff\xff\x03";  // a 65535-byte string
    raw += "abc";
    write_bytes(t.path(), prefix + chunk_bytes(2, 0, 1, 0, static_cast<std::uint32_t>(raw.size()), raw));
    profiler::TraceReader r(t.path());
    CHECK(r.problem().find("corrupt chunk at " + at(off) + " (") == 0);
  }
  // Nothing above may cost more than a few MiB (the 4 GiB of old would show here).
  CHECK(peak_rss() - before < 32 * kMiB);
}

TEST_CASE("a malformed events chunk with a valid checksum ends the pass; the chunks before it stand", "[hostile]") {
  TraceBuilder t("hostile-events");
  std::string good = three_chunks(t);
  auto chunks = profiler::TraceReader(t.path()).chunks();
  REQUIRE(chunks.size() == 3);
  std::string raw(40, '\0');  // room for 10 events, as the count says
  raw[0] = 99;                // but the first is of no kind there is
  write_bytes(t.path(), with_payload(good, chunks[2].offset, raw));
  profiler::TraceReader r(t.path());
  CHECK(r.problem().empty());  // every checksum holds: only decoding finds it
  analysis::Report rep = analysis::analyze(r);
  CHECK(rep.events == 20);
  CHECK(rep.problem == "corrupt events chunk at " + at(chunks[2].offset) +
                           " (unknown event kind 99); read 20 events from 2 whole event chunks before it");
  // The path is named once, by whoever prints the problem, not inside it.
  CHECK(rep.problem.find(t.path()) == std::string::npos);
}

TEST_CASE("memory_at reads the trace only up to its cursor: a bad chunk after it is never decoded", "[hostile]") {
  TraceBuilder t("hostile-cursor");
  std::string good = three_chunks(t);
  auto chunks = profiler::TraceReader(t.path()).chunks();
  REQUIRE(chunks.size() == 3);
  std::string raw(40, '\0');
  raw[0] = 99;
  write_bytes(t.path(), with_payload(good, chunks[2].offset, raw));
  profiler::TraceReader r(t.path());
  // A cursor before the third chunk: the first two are read, the third is not touched.
  analysis::MemoryAt early = analysis::memory_at(r, chunks[2].first_time_ns - chunks[0].first_time_ns - 1);
  CHECK(r.problem().empty());
  REQUIRE(early.devices.size() == 1);
  std::size_t blocks = 0;
  for (const auto& s : early.devices[0].segments) blocks += s.blocks.size();
  CHECK(blocks == 19);  // the allocations of the first two chunks: 9 beside the segment, then 10
  // A cursor at the end reaches it, and says so.
  analysis::memory_at(r, ~std::uint64_t{0} / 2);
  CHECK(r.problem().find("corrupt events chunk at " + at(chunks[2].offset)) == 0);
}

TEST_CASE("the trailer after the footer is checked", "[hostile]") {
  TraceBuilder t("hostile-trailer");
  std::string good = three_chunks(t);
  write_bytes(t.path(), good.substr(0, good.size() - 16));
  CHECK(profiler::TraceReader(t.path()).problem() ==
        "the trace's trailer is cut (0 of 16 bytes after the footer); every chunk was read");
  write_bytes(t.path(), good.substr(0, good.size() - 5));
  CHECK(profiler::TraceReader(t.path()).problem() ==
        "the trace's trailer is cut (11 of 16 bytes after the footer); every chunk was read");
  std::string damaged = good;
  damaged[damaged.size() - 1] = '?';
  write_bytes(t.path(), damaged);
  CHECK(profiler::TraceReader(t.path()).problem() ==
        "the trace's trailer is damaged (offset " + std::to_string(good.size() - 16) + "); every chunk was read");
  write_bytes(t.path(), good + "junk");
  CHECK(profiler::TraceReader(t.path()).problem() == "4 bytes follow the trailer and were ignored");
  write_bytes(t.path(), good);
  CHECK(profiler::TraceReader(t.path()).problem().empty());
}

TEST_CASE("site ids past the site table are no site: no crash, no table sized by an id", "[hostile]") {
  TraceBuilder t("hostile-sites");
  std::uint32_t real = t.site(12);
  t.segment(kSeg, 2 * kMiB);
  t.alloc(kSeg, 4096, 0xFFFFFFFFu);
  t.alloc(kSeg + 4096, 4096, 0x40000000u);
  t.alloc(kSeg + 8192, 4096, 0xFFFFFFFEu);
  t.alloc(kSeg + 12288, 4096, real);
  std::uint64_t before = peak_rss();
  profiler::TraceReader r = t.read();
  analysis::Report rep = analysis::analyze(r);
  CHECK(peak_rss() - before < 32 * kMiB);
  REQUIRE(rep.devices.size() == 1);
  CHECK(rep.devices[0].peak_allocated.allocated == 4 * 4096);
  CHECK(rep.sites.size() == 2);  // "none" and model.cpp:12
  CHECK(rep.sites[1].location == "model.cpp:12");
}

TEST_CASE("a module path naming a FIFO or a device is never opened", "[hostile]") {
  std::string fifo = "/tmp/memlens-test-" + std::to_string(::getpid()) + "-module.fifo";
  std::remove(fifo.c_str());
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  TraceBuilder t("hostile-fifo");
  t.writer().add_modules({{fifo, 0x400000, 0x500000, 0, "abcd"}, {"/dev/zero", 0x600000, 0x700000, 0, ""}});
  std::uint32_t in_fifo = t.writer().intern_site_address(0x401234);
  std::uint32_t in_zero = t.writer().intern_site_address(0x601234);
  t.segment(kSeg, 2 * kMiB);
  t.alloc(kSeg, 4096, in_fifo);
  t.alloc(kSeg + 4096, 4096, in_zero);
  profiler::TraceReader r = t.read();
  // Before the fix this blocked forever in open() waiting for a writer.
  CHECK(r.site(in_fifo).file.empty());
  CHECK(r.site(in_zero).file.empty());
  CHECK(analysis::analyze(r).devices[0].peak_allocated.allocated == 8192);
  std::remove(fifo.c_str());
}

TEST_CASE("export counts crafted sizes without signed overflow", "[hostile]") {
  TraceBuilder t("hostile-export");
  t.segment(kSeg, 2 * kMiB);
  t.alloc(kSeg, std::uint64_t{1} << 63, 0);
  t.alloc(kSeg + 4096, std::uint64_t{1} << 63, 0);  // wraps to 0 as unsigned: defined, not UB
  t.free(kSeg, 4096);
  profiler::TraceReader r = t.read();
  std::ostringstream out;
  profiler::export_chrome_trace(r, out);
  CHECK(out.str().find("\"bytes\":-9223372036854775808") != std::string::npos);
  CHECK(out.str().find("\"bytes\":-4096") != std::string::npos);
}

TEST_CASE("a header number that is not a whole number is a corrupt header, never cast", "[hostile]") {
  TraceBuilder t("hostile-header");
  const std::string whole = three_chunks(t);
  const auto json_len = get_le<std::uint32_t>(whole, 12);
  const std::string json = whole.substr(16, json_len), rest = whole.substr(16 + json_len + 4);
  for (const auto& [key, value, why] : {std::tuple{"pid", "1.8e24", "pid is not a whole number"},
                                        std::tuple{"start_unix_ns", "-1e300", "start_unix_ns is not a whole number"},
                                        std::tuple{"capacity", "-5", "capacity is not a whole number from 0"}}) {
    nlohmann::json h = nlohmann::json::parse(json);
    nlohmann::json& target = std::string(key) == "capacity" ? h["devices"][0] : h;
    target[key] = nlohmann::json::parse(value);
    const std::string text = h.dump();
    std::string bytes = whole.substr(0, 12);
    put_le<std::uint32_t>(bytes, static_cast<std::uint32_t>(text.size()));
    bytes += text;
    put_le<std::uint32_t>(
        bytes, static_cast<std::uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size()))));
    write_bytes(t.path(), bytes + rest);
    INFO(key);
    CHECK_THROWS_WITH(profiler::TraceReader(t.path()), t.path() + ": corrupt header: " + why);
  }
}

TEST_CASE("a stack whose frame deltas overflow 64 bits reads as frames of no site", "[hostile]") {
  // Two deltas of INT64_MAX (zigzag 2^64-2): adding them overflowed a signed sum (UBSan).
  TraceBuilder t("hostile-stack");
  const std::string prefix = before_footer(three_chunks(t));
  std::string raw;
  raw += '\x01';                                                         // first id
  raw += '\x03';                                                         // three frames
  const std::string delta = "\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01";  // varint 2^64 - 2
  raw += delta + delta + delta;
  write_bytes(t.path(), prefix + chunk_bytes(5, 0, 1, 0, static_cast<std::uint32_t>(raw.size()), raw));
  profiler::TraceReader r(t.path());
  CHECK(r.problem().find("without a footer") != std::string::npos);  // the stack table is whole
  CHECK(r.stack_sites(1) == std::vector<std::uint32_t>{0, 0, 0});
}
