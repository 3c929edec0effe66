// Devices, memory sources, the allocator's statistics and the memory API.
#include <catch2/catch.hpp>
#include <vector>
#include <memlens/runtime.hpp>
#include <memlens/allocator/direct_allocator.hpp>
#include <memlens/allocator/memory_source.hpp>
#include <memlens/common/number_text.hpp>

using namespace memlens;

TEST_CASE("device strings parse and print") {
  CHECK(Device("cpu").is_cpu());
  CHECK(Device("sim").str() == "sim:0");
  CHECK(Device("cuda:1").index() == 1);
  CHECK_THROWS_AS(Device("tpu"), DeviceError);
  CHECK_THROWS_WITH(Device("tpu"), "Expected one of cpu, sim, cuda device type at start of device string: tpu");
  CHECK_THROWS_WITH(Device("cuda:x"), "Invalid device string: 'cuda:x'");
}

TEST_CASE("cuda is served by sim when no CUDA backend is usable") {
  if (cuda_unavailable_reason().empty()) {  // a GPU: cuda is itself
    CHECK(resolve(Device("cuda")) == Device("cuda:0"));
    CHECK(ones({2}).cuda().device() == Device("cuda:0"));
    return;
  }
  CHECK(resolve(Device("cuda")) == Device("sim"));
  Tensor x = ones({2}).cuda();
  CHECK(x.device() == Device("sim"));
  CHECK(zeros({1}, Device("cuda")).device() == Device("sim"));
}

TEST_CASE("moving between devices copies - same-device to() is the tensor itself") {
  Tensor a = arange(4).to(kFloat32);
  Tensor s = a.to(Device("sim"));
  CHECK(s.device() == Device("sim"));
  CHECK(s.storage() != a.storage());
  CHECK(s.to(Device("sim")).is_same(s));
  CHECK(a.cpu().is_same(a));
  CHECK(equal(s.cpu(), a));
  std::int64_t before = memory_allocated(Device("sim"));
  Tensor s2 = a.to(Device("sim"));
  CHECK(memory_allocated(Device("sim")) - before == 512);
  CHECK_THROWS_AS(a + s, DeviceError);
  CHECK_THROWS_WITH(a + s,
                    "Expected all tensors to be on the same device, but found at least two devices, cpu and "
                    "sim:0! (when checking arguments for add)");
}

TEST_CASE("index_add and scatter refuse an index or a source on another device") {
  // On a GPU a host index or source would reach the kernel as a host pointer: every
  // argument's device is checked before any is read.
  const Device sim("sim");
  Tensor self = zeros({4, 2}).to(sim);
  Tensor index = arange(2);  // int64, on the cpu
  Tensor source = ones({2, 2}).to(sim);
  auto refused = [](const char* op) {
    return std::string("Expected all tensors to be on the same device, but found at least two devices, sim:0 and cpu! ") +
           "(when checking arguments for " + op + ")";
  };
  CHECK_THROWS_AS(self.index_add(0, index, source), DeviceError);
  CHECK_THROWS_WITH(self.index_add(0, index, source), refused("index_add"));
  CHECK_THROWS_WITH(self.index_add(0, index.to(sim), ones({2, 2})), refused("index_add"));
  CHECK(self.index_add(0, index.to(sim), source).sum().item<double>() == 4.0);
  Tensor rows = arange(2).view({1, 2}).to(sim);
  CHECK_THROWS_WITH(self.scatter(0, rows, ones({1, 2})), refused("scatter"));
  CHECK_THROWS_WITH(self.scatter(0, arange(2).view({1, 2}), ones({1, 2}).to(sim)), refused("scatter"));
  CHECK(self.scatter(0, rows, ones({1, 2}).to(sim)).sum().item<double>() == 2.0);
}

TEST_CASE("sim addresses come from its own range") {
  SimSource src(1 << 20);
  void* a = src.acquire(1000);
  void* b = src.acquire(1000);
  auto base = src.base();
  CHECK(reinterpret_cast<std::uintptr_t>(a) >= base);
  CHECK(reinterpret_cast<std::uintptr_t>(b) - reinterpret_cast<std::uintptr_t>(a) == 1024);
  CHECK(src.used() == 2048);
  src.release(a, 1000);
  src.release(b, 1000);
  CHECK(src.used() == 0);
  CHECK(src.acquire(2 << 20) == nullptr);  // more than the device has
  void* all = src.acquire(1 << 20);        // all of it, in one segment
  CHECK(all != nullptr);
  CHECK(src.acquire(512) == nullptr);
  src.release(all, 1 << 20);
}

TEST_CASE("sim fails a segment only when it lacks the bytes - as a GPU maps pages to any range") {
  // 8 segments of 1 MiB fill an 8 MiB device; every other one freed leaves 4 MiB free in
  // four 1 MiB holes between live segments. A first-fit range of the capacity alone would
  // refuse a 4 MiB segment (no 4 MiB hole); a GPU backs any free virtual stretch with its
  // free pages, and so does sim.
  SimSource src(8 << 20);
  std::vector<void*> seg;
  for (int i = 0; i < 8; ++i) seg.push_back(src.acquire(1 << 20));
  for (void* p : seg) REQUIRE(p != nullptr);
  CHECK(src.acquire(512) == nullptr);
  for (int i = 0; i < 8; i += 2) src.release(seg[static_cast<std::size_t>(i)], 1 << 20);
  CHECK(src.used() == (4 << 20));
  void* big = src.acquire(4 << 20);
  REQUIRE(big != nullptr);
  for (int i = 1; i < 8; i += 2) {  // its addresses overlap no live segment
    auto s = reinterpret_cast<std::uintptr_t>(seg[static_cast<std::size_t>(i)]), b = reinterpret_cast<std::uintptr_t>(big);
    CHECK((b + (4 << 20) <= s || s + (1 << 20) <= b));
  }
  CHECK(src.acquire(512) == nullptr);          // the device is full again
  static_cast<char*>(big)[(4 << 20) - 1] = 1;  // and the memory is real
  src.release(big, 4 << 20);
  for (int i = 1; i < 8; i += 2) src.release(seg[static_cast<std::size_t>(i)], 1 << 20);
  CHECK(src.used() == 0);
}

TEST_CASE("DirectAllocator statistics track current - peak and totals") {
  DirectAllocator alloc(std::make_unique<SimSource>(1 << 20));
  void* a = alloc.allocate(100);
  void* b = alloc.allocate(1000);
  auto s = alloc.stats();
  CHECK(s.allocated_bytes.all.current == 512 + 1024);
  CHECK(s.reserved_bytes.all.current == 512 + 1024);
  CHECK(s.requested_bytes.all.current == 1100);
  CHECK(s.allocation.all.current == 2);
  CHECK(s.segment.all.current == 2);
  alloc.deallocate(a);
  s = alloc.stats();
  CHECK(s.allocated_bytes.all.current == 1024);
  CHECK(s.allocated_bytes.all.peak == 1536);
  CHECK(s.allocated_bytes.all.freed == 512);
  alloc.reset_peak_stats();
  CHECK(alloc.stats().allocated_bytes.all.peak == 1024);
  alloc.deallocate(b);
  CHECK(alloc.stats().num_device_free == 2);
}

TEST_CASE("DirectAllocator out of memory is a clear and recoverable OutOfMemoryError") {
  DirectAllocator alloc(std::make_unique<SimSource>(1 << 20));
  void* a = alloc.allocate(512 * 1024);
  CHECK_THROWS_AS(alloc.allocate(1 << 20), OutOfMemoryError);
  CHECK_THROWS_WITH(alloc.allocate(1 << 20),
                    "sim:0 out of memory. Tried to allocate 1.00 MiB. Device has a total "
                    "capacity of 1.00 MiB of which 512.00 KiB is free. 512.00 KiB is "
                    "allocated by tensors.");
  CHECK(alloc.stats().num_ooms == 2);
  alloc.deallocate(a);
  void* b = alloc.allocate(1 << 20);  // the program continues
  CHECK(b != nullptr);
  alloc.deallocate(b);
  // Through tensors (the test runs with MEMLENS_SIM_MEMORY=1GiB).
  CHECK_THROWS_AS(empty({1 << 30}, Device("sim")), OutOfMemoryError);
  Tensor ok = empty({1 << 20}, Device("sim"));
  CHECK(ok.numel() == (1 << 20));
}

TEST_CASE("byte sizes parse with units") {
  CHECK(parse_byte_size("16GiB") == (std::size_t{16} << 30));
  CHECK(parse_byte_size("512mb") == (std::size_t{512} << 20));
  CHECK(parse_byte_size("4096") == 4096);
  CHECK_THROWS_WITH(parse_byte_size("lots"), "invalid byte size 'lots' (expected e.g. 16GiB, 512MiB or 1048576)");
  CHECK_THROWS_WITH(parse_byte_size("3 parsecs"), "invalid byte size '3 parsecs' (unknown unit ' parsecs')");
}

TEST_CASE("memory_summary shows the device's figures") {
  Tensor keep = ones({1024}, Device("sim"));
  std::string s = memory_summary(Device("sim"));
  CHECK(s.find("memlens memory summary, device sim:0") != std::string::npos);
  CHECK(s.find("| Allocated memory") != std::string::npos);
  CHECK(memory_reserved(Device("sim")) >= memory_allocated(Device("sim")));
  CHECK(memory_allocated(Device("sim")) >= 4096);
  empty_cache(Device("sim"));
  CHECK(format_bytes(4000256) == "3.81 MiB");
  CHECK(format_bytes(100) == "100 B");
}

TEST_CASE("pin_memory: a CPU tensor in pinned memory, cached in power-of-two blocks") {
  host_empty_cache();
  auto stat = [](const char* key) { return host_memory_stats()[key]; };
  const std::int64_t segments_before = stat("segment.all.allocated");
  Tensor x = arange(1000).to(kFloat32);  // 4000 bytes
  CHECK_FALSE(x.is_pinned());
  {
    Tensor p = x.pin_memory();
    CHECK(p.is_pinned());
    CHECK(p.device() == kCPU);  // pinned tensors are CPU tensors
    CHECK(equal(p, x));
    CHECK(p.pin_memory().is_same(p));  // already pinned: itself
    CHECK((p + 1).device() == kCPU);
    CHECK_FALSE((p + 1).is_pinned());  // ops make ordinary CPU tensors
    CHECK(stat("allocated_bytes.all.current") == 4096);
    Tensor d = p.to(Device("sim"), /*non_blocking=*/true);
    CHECK(equal(d.cpu(), x));
    CHECK(p.to(kCPU).is_same(p));
  }
  // Freed, the block stays cached for the next request of its size.
  CHECK(stat("allocated_bytes.all.current") == 0);
  CHECK(stat("reserved_bytes.all.current") == 4096);
  Tensor q = ones({1000}).pin_memory();
  CHECK(stat("segment.all.allocated") == segments_before + 1);  // reused, not a new block
  Tensor big = ones({1025}).pin_memory();                       // 4100 bytes: an 8192-byte block
  CHECK(stat("reserved_bytes.all.current") == 4096 + 8192);
  big = Tensor();
  host_empty_cache();
  CHECK(stat("reserved_bytes.all.current") == 4096);  // only the live block remains
  CHECK_THROWS_WITH(ones({2}, Device("sim")).pin_memory(), "cannot pin 'sim:0' memory: only CPU tensors can be pinned");
  Tensor w = ones({3}, requires_grad());
  (w.pin_memory() * 2).sum().backward();
  CHECK(w.grad().toString() == "tensor([2., 2., 2.])");
}

TEST_CASE("format_bytes takes every int64, the most negative too") {
  CHECK(format_bytes(INT64_MIN) == "-8388608.00 TiB");  // 2^63 bytes: its negation does not fit an int64
  CHECK(format_bytes(INT64_MAX) == "8388608.00 TiB");
  CHECK(format_bytes(-1536) == "-1.50 KiB");
  CHECK(format_byte_count(UINT64_MAX) == "16777216.00 TiB");
  CHECK(format_byte_count(1023) == "1023 B");
}
