// Allocator replay: the what-if tool over recorded request sequences.
#include <catch2/catch.hpp>
#include <memlens/allocator/request_replay.hpp>
#include <sstream>

using namespace memlens;

namespace {
constexpr std::int64_t MiB = 1 << 20;

std::vector<ReplayRequest> parse(const std::string& text) {
  std::istringstream in(text);
  return parse_replay(in, "script");
}

ReplayResult run(const std::string& text, const std::string& conf, std::size_t capacity) {
  return replay(parse(text), ReplayOptions{AllocatorConfig::parse(conf), capacity});
}

std::string order_dependence() {
  std::string s;
  for (int i = 0; i < 8; ++i) s += "alloc " + std::to_string(i) + " 16MiB\n";
  for (int i = 0; i < 8; ++i) s += "free " + std::to_string(i) + "\n";
  for (int i = 8; i < 12; ++i) s += "alloc " + std::to_string(i) + " 32MiB\n";
  return s;
}
}  // namespace

TEST_CASE("replay scripts parse as text or CSV") {
  auto r = parse("op,id,bytes,stream\nalloc,1,4096,0\nalloc 2 1MiB 3  # a comment\nfree 1\n\nfree,2\n");
  REQUIRE(r.size() == 4);
  CHECK(r[0].op == ReplayRequest::Op::Alloc);
  CHECK(r[0].bytes == 4096);
  CHECK(r[1].bytes == (1u << 20));
  CHECK(r[1].stream == 3);
  CHECK(r[1].line == 3);
  CHECK(r[3].op == ReplayRequest::Op::Free);
  CHECK(r[3].id == 2);
  CHECK_THROWS_AS(parse("alloc 1\n"), ReplayError);
  CHECK_THROWS_WITH(parse("alloc 1\n"), "script:1: expected 'alloc ID BYTES [STREAM]'");
  CHECK_THROWS_WITH(parse("free 1\nmalloc 2 3\n"), "script:2: unknown request 'malloc' (expected alloc or free)");
  CHECK_THROWS_WITH(parse("alloc x 3\n"), "script:1: bad id 'x' (expected a non-negative integer)");
  CHECK_THROWS_WITH(parse("alloc 1 3parsecs\n"), "script:1: invalid byte size '3parsecs' (unknown unit 'parsecs')");
}

TEST_CASE("replay refuses inconsistent sequences") {
  CHECK_THROWS_WITH(run("free 4\n", "", 1 << 30), "line 1: free of id 4, which is not allocated");
  CHECK_THROWS_WITH(run("alloc 1 10\nalloc 1 10\n", "", 1 << 30), "line 2: id 1 is allocated twice");
}

TEST_CASE("replay compares configurations on the order-dependence case") {
  auto fixed = run(order_dependence(), "", std::size_t{1} << 30);
  auto expandable = run(order_dependence(), "expandable_segments:True", std::size_t{1} << 30);
  CHECK(fixed.peak_reserved == 256 * MiB);
  CHECK(expandable.peak_reserved == 128 * MiB);
  CHECK(fixed.peak_allocated == 128 * MiB);
  CHECK(fixed.allocs == 12);
  CHECK(fixed.frees == 8);  // those of the script; what is still live is released afterwards, uncounted
  CHECK(fixed.reserved_over_allocated_at_peak == Approx(2.0));
  CHECK(expandable.reserved_over_allocated_at_peak == Approx(1.0));
  // With 200 MiB the fixed segments need a retry that frees the cache; expandable does not.
  auto tight = run(order_dependence(), "", 200 * MiB);
  CHECK(tight.ooms.empty());
  CHECK(tight.num_alloc_retries == 1);
  CHECK(run(order_dependence(), "expandable_segments:True", 200 * MiB).num_alloc_retries == 0);
}

TEST_CASE("replay shows an OOM that expandable segments avoid") {
  // Nine-MiB tensors share 20 MiB segments two at a time, wasting 2 MiB per segment.
  std::string s;
  for (int i = 0; i < 11; ++i) s += "alloc " + std::to_string(i) + " 9MiB\n";
  auto fixed = run(s, "", 100 * MiB);
  REQUIRE(fixed.ooms.size() == 1);
  CHECK(fixed.ooms[0].line == 11);
  CHECK(fixed.ooms[0].reserved == 100 * MiB);
  CHECK(fixed.ooms[0].allocated == 90 * MiB);
  CHECK(fixed.ooms[0].largest_free_block == 2 * MiB);
  auto expandable = run(s, "expandable_segments:True", 100 * MiB);
  CHECK(expandable.ooms.empty());
  CHECK(expandable.peak_reserved == 100 * MiB);  // 99 MiB rounded to 2 MiB pages
  std::string text = format_replay(fixed, ReplayOptions{{}, 100 * MiB});
  CHECK(text.find("OOM at line 11: 9.00 MiB with 100.00 MiB reserved, 90.00 MiB allocated, largest free block 2.00 MiB") !=
        std::string::npos);
}
