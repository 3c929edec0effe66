// The caching allocator's policy, with exact addresses and sizes on a private sim range.
#include <catch2/catch.hpp>
#include <memlens/runtime.hpp>
#include <memlens/allocator/caching_allocator.hpp>
#include <memlens/allocator/cuda_source.hpp>
#include <map>
#include <random>
#include <thread>

using namespace memlens;

namespace {

constexpr std::size_t KiB = 1024, MiB = 1024 * 1024;

// An allocator over its own sim range, with addresses as offsets into it.
struct Fixture {
  explicit Fixture(std::size_t capacity = 1024 * MiB, const std::string& conf = "") {
    auto src = std::make_unique<SimSource>(capacity);
    base = src->base();
    alloc = std::make_unique<CachingAllocator>(std::move(src), AllocatorConfig::parse(conf));
  }
  std::uintptr_t off(void* p) const { return reinterpret_cast<std::uintptr_t>(p) - base; }
  AllocatorStats stats() const { return alloc->stats(); }
  std::uintptr_t base;
  std::unique_ptr<CachingAllocator> alloc;
};

}  // namespace

TEST_CASE("requests are rounded to 512 B and segments sized by pool") {
  Fixture f;
  CHECK(f.alloc->round_size(1) == 512);
  CHECK(f.alloc->round_size(512) == 512);
  CHECK(f.alloc->round_size(513) == 1024);
  CHECK(f.alloc->round_size(MiB) == MiB);
  CHECK(CachingAllocator::allocation_size(KiB) == 2 * MiB);
  CHECK(CachingAllocator::allocation_size(MiB) == 2 * MiB);
  CHECK(CachingAllocator::allocation_size(MiB + 512) == 20 * MiB);
  CHECK(CachingAllocator::allocation_size(10 * MiB - 512) == 20 * MiB);
  CHECK(CachingAllocator::allocation_size(10 * MiB) == 10 * MiB);
  CHECK(CachingAllocator::allocation_size(11 * MiB + 512) == 12 * MiB);
  Fixture p2(1024 * MiB, "roundup_power2_divisions:4");
  CHECK(p2.alloc->round_size(1200 * KiB) == 1280 * KiB);  // 1 MiB + 4 divisions of 256 KiB
  CHECK(p2.alloc->round_size(MiB) == MiB);
  CHECK(p2.alloc->round_size(1000) == 1024);  // below 512 x divisions: plain rounding
}

TEST_CASE("small requests are carved from one 2 MiB segment") {
  Fixture f;
  void* a = f.alloc->allocate(1000);
  void* b = f.alloc->allocate(1000);
  void* c = f.alloc->allocate(100);
  CHECK(f.off(a) == 0);
  CHECK(f.off(b) == 1024);
  CHECK(f.off(c) == 2048);
  auto s = f.stats();
  CHECK(s.segment.small_pool.current == 1);
  CHECK(s.segment.large_pool.current == 0);
  CHECK(s.reserved_bytes.all.current == 2 * MiB);
  CHECK(s.allocated_bytes.small_pool.current == 2560);
  CHECK(s.requested_bytes.all.current == 2100);
  CHECK(s.inactive_split.small_pool.current == 1);
  CHECK(s.inactive_split_bytes.small_pool.current == 2 * MiB - 2560);
  for (void* p : {a, b, c}) f.alloc->deallocate(p);
}

TEST_CASE("large requests: 20 MiB segments under 10 MiB and the split threshold") {
  Fixture f;
  void* a = f.alloc->allocate(3 * MiB);
  void* b = f.alloc->allocate(3 * MiB);
  CHECK(f.off(a) == 0);
  CHECK(f.off(b) == 3 * MiB);
  CHECK(f.stats().reserved_bytes.large_pool.current == 20 * MiB);
  // 19.5 MiB gets a 20 MiB segment; the 0.5 MiB rest is not worth a split (> 1 MiB needed).
  void* c = f.alloc->allocate(19 * MiB + 512 * KiB);
  CHECK(f.off(c) == 20 * MiB);
  CHECK(f.stats().allocated_bytes.large_pool.current == 26 * MiB);
  auto snap = f.alloc->snapshot();
  REQUIRE(snap.size() == 2);
  CHECK(snap[1].blocks.size() == 1);
  CHECK(snap[1].blocks[0].size == 20 * MiB);
  CHECK(snap[1].blocks[0].requested == 19 * MiB + 512 * KiB);
  // 15 MiB fits no free block (14 MiB are left in the first segment) and is above
  // 10 MiB: an exact, 2 MiB-rounded segment.
  void* d = f.alloc->allocate(15 * MiB);
  CHECK(f.off(d) == 40 * MiB);
  CHECK(f.stats().reserved_bytes.large_pool.current == 40 * MiB + 16 * MiB);
  for (void* p : {a, b, c, d}) f.alloc->deallocate(p);
}

TEST_CASE("free neighbours coalesce back into the whole segment") {
  Fixture f;
  void* a = f.alloc->allocate(KiB);
  void* b = f.alloc->allocate(KiB);
  void* c = f.alloc->allocate(KiB);
  f.alloc->deallocate(b);
  CHECK(f.stats().inactive_split.all.current == 2);  // b's hole and the segment's tail
  f.alloc->deallocate(a);                            // merges with b
  auto snap = f.alloc->snapshot();
  REQUIRE(snap.size() == 1);
  REQUIRE(snap[0].blocks.size() == 3);
  CHECK(snap[0].blocks[0].size == 2 * KiB);
  CHECK(snap[0].blocks[0].state == BlockSnapshot::State::Free);
  CHECK(snap[0].blocks[1].state == BlockSnapshot::State::Allocated);
  f.alloc->deallocate(c);
  snap = f.alloc->snapshot();
  REQUIRE(snap[0].blocks.size() == 1);
  CHECK(snap[0].blocks[0].size == 2 * MiB);
  auto s = f.stats();
  CHECK(s.inactive_split.all.current == 0);
  CHECK(s.inactive_split_bytes.all.current == 0);
  CHECK(s.allocated_bytes.all.current == 0);
  CHECK(s.reserved_bytes.all.current == 2 * MiB);  // cached
}

TEST_CASE("best fit picks the smallest free block that fits") {
  Fixture f;
  void* a = f.alloc->allocate(4 * KiB);  // [0, 4K)
  void* g1 = f.alloc->allocate(KiB);     // guard
  void* b = f.alloc->allocate(2 * KiB);  // [5K, 7K)
  void* g2 = f.alloc->allocate(KiB);     // guard
  f.alloc->deallocate(a);
  f.alloc->deallocate(b);
  void* c = f.alloc->allocate(2 * KiB);
  CHECK(f.off(c) == 5 * KiB);
  void* d = f.alloc->allocate(3 * KiB);
  CHECK(f.off(d) == 0);
  for (void* p : {g1, g2, c, d}) f.alloc->deallocate(p);
}

TEST_CASE("blocks belong to their stream") {
  Fixture f;
  void* a = f.alloc->allocate(KiB, 0);
  f.alloc->deallocate(a);
  void* b = f.alloc->allocate(KiB, 7);  // a's cached segment is stream 0's
  CHECK(f.off(b) == 2 * MiB);
  CHECK(f.stats().segment.all.current == 2);
  void* c = f.alloc->allocate(KiB, 0);
  CHECK(f.off(c) == 0);
  f.alloc->deallocate(b);
  f.alloc->deallocate(c);
  auto snap = f.alloc->snapshot();
  CHECK(snap[1].stream == 7);
}

TEST_CASE("record_stream keeps a freed block until the other stream's work completes") {
  Fixture f;
  const StreamId side = 4242;
  void* a = f.alloc->allocate(KiB);
  f.alloc->record_stream(a, side);
  SimStreams::instance().submit(side);  // a kernel on `side` still reads a
  f.alloc->deallocate(a);
  CHECK(f.stats().allocated_bytes.all.current == 0);
  CHECK(f.stats().active_bytes.all.current == 1024);  // freed, not yet reusable
  CHECK(f.alloc->snapshot()[0].blocks[0].state == BlockSnapshot::State::PendingFree);
  void* b = f.alloc->allocate(KiB);
  CHECK(f.off(b) == 1024);  // a is not reused
  SimStreams::instance().synchronize(side);
  void* c = f.alloc->allocate(KiB);  // the completed event frees a first
  CHECK(f.off(c) == 0);
  CHECK(f.stats().active_bytes.all.current == 2048);
  f.alloc->deallocate(b);
  f.alloc->deallocate(c);
}

TEST_CASE("max_split_size: oversize blocks are neither split nor used for small requests") {
  Fixture f(1024 * MiB, "max_split_size_mb:40");
  void* big = f.alloc->allocate(50 * MiB);
  f.alloc->deallocate(big);
  void* small = f.alloc->allocate(30 * MiB);  // the cached 50 MiB block is oversize: a new segment
  CHECK(f.off(small) == 50 * MiB);
  void* large = f.alloc->allocate(45 * MiB);  // >= max_split: may use it, but not split it
  CHECK(f.off(large) == 0);
  CHECK(f.stats().allocated_bytes.all.current == 30 * MiB + 50 * MiB);
  f.alloc->deallocate(small);
  f.alloc->deallocate(large);
  CHECK(f.alloc->config_string() == "max_split_size_mb:40,roundup_power2_divisions:0,expandable_segments:False");
}

namespace {
// Counts what the allocator reports, by kind.
struct CountingObserver : AllocatorObserver {
  std::map<EventKind, int> seen;
  void on_event(const AllocatorEvent& e) override { ++seen[e.kind]; }
};
}  // namespace

TEST_CASE("OOM is staged: free the cache - retry - then a clear error") {
  Fixture f(64 * MiB);
  CountingObserver counts;
  f.alloc->add_observer(&counts);
  void* a = f.alloc->allocate(30 * MiB);
  void* b = f.alloc->allocate(30 * MiB);
  f.alloc->deallocate(b);                 // cached
  void* c = f.alloc->allocate(32 * MiB);  // only fits once b's segment is released
  CHECK(c != nullptr);
  auto s = f.stats();
  CHECK(s.num_alloc_retries == 1);
  CHECK(s.num_device_free == 1);
  CHECK(s.num_ooms == 0);
  CHECK_THROWS_AS(f.alloc->allocate(40 * MiB), OutOfMemoryError);
  CHECK(f.stats().num_ooms == 1);
  CHECK(f.stats().num_alloc_retries == 2);
  f.alloc->deallocate(a);
  f.alloc->deallocate(c);
  CHECK(f.stats().allocated_bytes.all.current == 0);
  // Every failed attempt was reported: 32 MiB failed once, 40 MiB before and after its retry.
  using K = EventKind;
  CHECK(counts.seen[K::AllocFailed] == 3);
  CHECK(counts.seen[K::AllocRetry] == 2);
  CHECK(counts.seen[K::Oom] == 1);
  CHECK(counts.seen[K::SegmentFree] == 1);
  f.alloc->remove_observer(&counts);
  void* d = f.alloc->allocate(40 * MiB);  // the program goes on
  f.alloc->deallocate(d);
}

TEST_CASE("the OOM message says how much of the reserve is free but fragmented") {
  Fixture f(64 * MiB);
  void* x = f.alloc->allocate(9 * MiB);  // segment 1: x, y, 2 MiB tail
  void* y = f.alloc->allocate(9 * MiB);
  void* z = f.alloc->allocate(9 * MiB);  // segment 2: z, w, 2 MiB tail
  void* w = f.alloc->allocate(9 * MiB);
  f.alloc->deallocate(x);
  f.alloc->deallocate(z);
  CHECK_THROWS_WITH(f.alloc->allocate(30 * MiB),
                    "sim:0 out of memory. Tried to allocate 30.00 MiB. Device has a total capacity of 64.00 MiB of "
                    "which 24.00 MiB is free. Of the allocated memory 18.00 MiB is allocated by tensors, and 22.00 MiB "
                    "is reserved but unallocated (22.00 MiB cached in free blocks, the largest 9.00 MiB). If reserved "
                    "but unallocated memory is large, try MEMLENS_ALLOC_CONF=expandable_segments:True to avoid "
                    "fragmentation.");
  Fragmentation fr = fragmentation(*f.alloc);
  CHECK(fr.total_free == static_cast<std::int64_t>(22 * MiB));
  CHECK(fr.largest_free_block == static_cast<std::int64_t>(9 * MiB));
  CHECK(fr.free_fragmentation == Approx(1 - 9.0 / 22));
  CHECK(fr.reserved_over_allocated == Approx(40.0 / 18));
  CHECK(fr.inactive_split_over_reserved == Approx(22.0 / 40));
  f.alloc->deallocate(y);
  f.alloc->deallocate(w);
}

TEST_CASE("empty_cache returns whole free segments only") {
  Fixture f;
  void* a = f.alloc->allocate(KiB);
  void* b = f.alloc->allocate(5 * MiB);
  void* c = f.alloc->allocate(KiB, 3);
  f.alloc->deallocate(b);
  f.alloc->deallocate(c);
  f.alloc->empty_cache();
  auto s = f.stats();
  CHECK(s.reserved_bytes.all.current == 2 * MiB);  // a's segment stays
  CHECK(s.num_device_free == 2);
  f.alloc->deallocate(a);
  f.alloc->empty_cache();
  CHECK(f.stats().reserved_bytes.all.current == 0);
}

TEST_CASE("memory_stats keys and values after a scripted sequence") {
  Fixture f;
  void* a = f.alloc->allocate(1000);
  void* b = f.alloc->allocate(3 * MiB);
  f.alloc->deallocate(a);
  auto m = f.stats().as_map();
  CHECK(m.size() == 9 * 3 * 4 + 4);
  CHECK(m.at("allocation.all.current") == 1);
  CHECK(m.at("allocation.all.allocated") == 2);
  CHECK(m.at("allocation.all.freed") == 1);
  CHECK(m.at("allocated_bytes.all.peak") == 1024 + 3 * MiB);
  CHECK(m.at("allocated_bytes.large_pool.current") == 3 * MiB);
  CHECK(m.at("requested_bytes.small_pool.freed") == 1000);
  CHECK(m.at("reserved_bytes.all.current") == 22 * MiB);
  CHECK(m.at("segment.small_pool.current") == 1);
  CHECK(m.at("active.all.current") == 1);
  CHECK(m.at("inactive_split.large_pool.current") == 1);
  CHECK(m.at("inactive_split_bytes.large_pool.current") == 17 * MiB);
  CHECK(m.at("inactive_split_bytes.small_pool.current") == 0);  // the small segment is whole again
  CHECK(m.at("num_device_alloc") == 2);
  CHECK(m.at("num_alloc_retries") == 0);
  f.alloc->reset_peak_stats();
  CHECK(f.stats().allocated_bytes.all.peak == 3 * MiB);
  f.alloc->deallocate(b);
}

TEST_CASE("order dependence: eight 16 MiB then four 32 MiB") {
  auto run = [](const std::string& conf) {
    Fixture f(1024 * MiB, conf);
    std::vector<void*> v;
    for (int i = 0; i < 8; ++i) v.push_back(f.alloc->allocate(16 * MiB));
    for (void* p : v) f.alloc->deallocate(p);
    v.clear();
    for (int i = 0; i < 4; ++i) v.push_back(f.alloc->allocate(32 * MiB));
    std::int64_t peak = f.stats().reserved_bytes.all.peak;
    for (void* p : v) f.alloc->deallocate(p);
    return peak;
  };
  CHECK(run("") == static_cast<std::int64_t>(256 * MiB));  // as PyTorch: the 16 MiB segments cannot serve 32 MiB
  CHECK(run("expandable_segments:True") == static_cast<std::int64_t>(128 * MiB));  // one segment, reused
}

TEST_CASE("expandable segments grow by pages and shrink on empty_cache") {
  Fixture f(1024 * MiB, "expandable_segments:True");
  void* a = f.alloc->allocate(3 * MiB);
  void* b = f.alloc->allocate(3 * MiB);
  CHECK(f.off(b) - f.off(a) == 3 * MiB);
  CHECK(f.stats().reserved_bytes.all.current == 6 * MiB);  // 3 MiB pages mapped as needed: 4 MiB, then 2 more
  auto snap = f.alloc->snapshot();
  REQUIRE(snap.size() == 1);
  CHECK(snap[0].expandable);
  CHECK(snap[0].size == 6 * MiB);
  f.alloc->deallocate(b);
  f.alloc->empty_cache();
  CHECK(f.stats().reserved_bytes.all.current == 4 * MiB);  // the free tail's whole pages went back
  f.alloc->deallocate(a);
  f.alloc->empty_cache();
  CHECK(f.stats().reserved_bytes.all.current == 0);
  CHECK(f.alloc->snapshot().empty());
}

TEST_CASE("the configuration parses PyTorch's syntax and refuses nonsense") {
  auto c = AllocatorConfig::parse("max_split_size_mb:128,roundup_power2_divisions:4,expandable_segments:True");
  CHECK(c.max_split_size == 128 * MiB);
  CHECK(c.roundup_power2_divisions == 4);
  CHECK(c.expandable_segments);
  CHECK(AllocatorConfig::parse(c.to_string()).to_string() == c.to_string());
  CHECK_THROWS_WITH(AllocatorConfig::parse("max_split_size:5"),
                    "MEMLENS_ALLOC_CONF: unknown option 'max_split_size' (known: max_split_size_mb, "
                    "roundup_power2_divisions, expandable_segments)");
  CHECK_THROWS_WITH(AllocatorConfig::parse("max_split_size_mb:big"),
                    "MEMLENS_ALLOC_CONF: max_split_size_mb expects a number, got 'big'");
  CHECK_THROWS_WITH(AllocatorConfig::parse("roundup_power2_divisions:3"),
                    "MEMLENS_ALLOC_CONF: roundup_power2_divisions must be a power of 2, got 3");
  CHECK_THROWS_WITH(AllocatorConfig::parse("expandable_segments"),
                    "MEMLENS_ALLOC_CONF: expected key:value, got 'expandable_segments'");
}

TEST_CASE("tensors on sim use the caching allocator", "[sim]") {
  Device sim("sim");
  empty_cache(sim);
  std::int64_t reserved0 = memory_reserved(sim);
  {
    Tensor t = empty({5 << 20}, TensorOptions(kFloat32).device(sim));  // 20 MiB
    CHECK(memory_allocated(sim) >= 20 << 20);
  }
  CHECK(memory_reserved(sim) - reserved0 == 20 << 20);  // cached after the tensor died
  Tensor again = empty({5 << 20}, TensorOptions(kFloat32).device(sim));
  CHECK(memory_reserved(sim) - reserved0 == 20 << 20);  // reused, not reserved again
  again = Tensor();
  empty_cache(sim);
  CHECK(memory_reserved(sim) == reserved0);
  CHECK(memory_stats(sim).at("num_device_free") >= 1);
  CHECK(memory_summary(sim).find("Allocator config: roundup_power2_divisions:0,expandable_segments:False") != std::string::npos);
}

TEST_CASE("eight threads allocating and freeing keep the statistics balanced", "[concurrency]") {
  Fixture f(2048 * MiB);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      std::uniform_int_distribution<std::size_t> size(1, 4 * MiB);
      std::vector<void*> live;
      for (int i = 0; i < 2000; ++i) {
        if (live.size() < 16 && (live.empty() || rng() % 2)) {
          live.push_back(f.alloc->allocate(size(rng), static_cast<StreamId>(t % 2)));
        } else {
          std::size_t k = rng() % live.size();
          f.alloc->deallocate(live[k]);
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
        }
      }
      for (void* p : live) f.alloc->deallocate(p);
    });
  for (auto& th : threads) th.join();
  auto s = f.stats();
  CHECK(s.allocated_bytes.all.current == 0);
  CHECK(s.allocation.all.current == 0);
  CHECK(s.active.all.current == 0);
  CHECK(s.allocation.all.allocated == s.allocation.all.freed);
  CHECK(s.requested_bytes.all.current == 0);
  f.alloc->empty_cache();
  CHECK(f.stats().reserved_bytes.all.current == 0);
}

TEST_CASE("the caching allocator on cudaMalloc", "[gpu]") {
  std::string reason = cuda_unavailable_reason();
  if (reason.rfind("no CUDA device", 0) == 0 || !cuda_source_available()) {
    WARN("skipped: " << reason);
    CHECK_THROWS_AS(CudaSource(0), DeviceError);
    return;
  }
  CachingAllocator alloc(std::make_unique<CudaSource>(0));
  void* a = alloc.allocate(1000);
  void* b = alloc.allocate(1000);
  CHECK(reinterpret_cast<std::uintptr_t>(b) - reinterpret_cast<std::uintptr_t>(a) == 1024);
  CHECK(alloc.stats().reserved_bytes.all.current == static_cast<std::int64_t>(2 * MiB));
  alloc.deallocate(a);
  alloc.deallocate(b);
  alloc.empty_cache();
  CHECK(alloc.stats().reserved_bytes.all.current == 0);
  CHECK_THROWS_AS(alloc.allocate(std::size_t{1} << 50), OutOfMemoryError);
}
