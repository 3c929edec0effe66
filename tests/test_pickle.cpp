// The pickle reader for PyTorch snapshots: hand-assembled pickles opcode by opcode (the
// byte values from Python's pickletools), hostile ones, and the real snapshots in
// ../shared/torch-snapshots, whose sizes the README there states.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memlens/snapshot/py_document.hpp>
#include <sstream>

using namespace memlens::snapshot;
using Kind = PyValue::Kind;

namespace {

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

std::string short_str(const std::string& s) { return bytes({0x8c, static_cast<int>(s.size())}) + s; }

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("pickle: the opcodes of a snapshot, value by value", "[snapshot]") {
  // {'a': [1, -2, 300, 70000, None, True], 'addr': 2**64 - 1, 'neg': -129, 'f': 1.5, 'b': b'xy', 't': ('a',)}
  std::string p = bytes({0x80, 4, 0x95, 0, 0, 0, 0, 0, 0, 0, 0}) + bytes({0x7d, 0x94, 0x28}) + short_str("a") +
                  bytes({0x94, 0x5d, 0x94, 0x28, 0x4b, 1,    0x4a, 0xfe, 0xff, 0xff, 0xff,
                         0x4d, 0x2c, 0x01, 0x4a, 0x70, 0x11, 0x01, 0x00, 0x4e, 0x88, 0x65}) +
                  short_str("addr") + bytes({0x8a, 9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00}) + short_str("neg") +
                  bytes({0x8a, 2, 0x7f, 0xff}) + short_str("f") + bytes({0x47, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0}) + short_str("b") +
                  bytes({0x43, 2, 'x', 'y'}) + short_str("t") + bytes({0x68, 1, 0x85}) + bytes({0x75, 0x2e});
  PyDocument doc(p);
  const PyValue& root = doc.root();
  REQUIRE(root.is(Kind::Dict));
  CHECK(root.size() == 6);
  const PyValue* a = root.get("a");
  REQUIRE(a);
  REQUIRE(a->is(Kind::List));
  REQUIRE(a->size() == 6);
  CHECK(a->items()[0]->as_i64() == 1);
  CHECK(a->items()[1]->as_i64() == -2);
  CHECK(a->items()[2]->as_i64() == 300);
  CHECK(a->items()[3]->as_i64() == 70000);
  CHECK(a->items()[4]->is(Kind::None));
  CHECK(a->items()[5]->boolean);
  CHECK(root.get("addr")->as_u64() == ~std::uint64_t{0});  // nine bytes: pytorch #115234
  CHECK_THROWS_WITH(root.get("addr")->as_i64(), "expected an int of 64 bits, found int");
  CHECK(root.get("neg")->as_i64() == -129);
  CHECK_THROWS_WITH(root.get("neg")->as_u64(), "expected a non-negative int, found -129");
  CHECK(root.get("f")->real == 1.5);
  CHECK(root.get("b")->text() == "xy");
  const PyValue* t = root.get("t");
  REQUIRE(t->is(Kind::Tuple));
  CHECK(t->items()[0] == root.items()[0]);  // BINGET 0: the memoised key "a" itself, not a copy
  CHECK(root.get("missing") == nullptr);
}

TEST_CASE("pickle: code, lies and truncation are refused with the offset", "[snapshot]") {
  // GLOBAL 'os\nsystem\n': what a malicious pickle starts with.
  CHECK_THROWS_WITH(PyDocument(bytes({0x80, 2, 0x63}) + "os\nsystem\n"),
                    "pickle offset 2: opcode GLOBAL (0x63) is not allowed: a memory snapshot holds only plain data, and "
                    "memlens executes no pickle code");
  CHECK_THROWS_WITH(PyDocument(bytes({0x80, 4, 0x4e, 0x52})),
                    "pickle offset 3: opcode REDUCE (0x52) is not allowed: a memory snapshot holds only plain data, and "
                    "memlens executes no pickle code");
  // A string that declares 4 GiB in a 10-byte file: refused before anything is allocated.
  CHECK_THROWS_WITH(PyDocument(bytes({0x80, 4, 0x58, 0xff, 0xff, 0xff, 0xff, 'a', 'b', '.'})),
                    "pickle offset 2: a str of 4294967295 bytes in the 3 bytes left");
  CHECK_THROWS_WITH(PyDocument(bytes({0x80, 4, 0x7d})), "pickle offset 3: the pickle ends without STOP");
  CHECK_THROWS_WITH(PyDocument(bytes({0x80, 4, 0x4a, 1})),
                    "pickle offset 3: the pickle ends inside an opcode's argument (4 bytes wanted)");
  CHECK_THROWS_WITH(PyDocument(bytes({0x80, 4, 0x68, 7, 0x2e})), "pickle offset 2: memo entry 7 was never stored");
  CHECK_THROWS_WITH(PyDocument(bytes({0x80, 4, 0x4e, 0x73, 0x2e})), "pickle offset 3: SETITEM on a stack of 1");
  CHECK_THROWS_WITH(PyDocument(bytes({0x80, 4, 0x5d, 0x4e, 0x4e, 0x73, 0x2e})),
                    "pickle offset 5: adding to a list where a dict belongs");
  CHECK_THROWS_WITH(PyDocument(bytes({0x80, 4, 0x4e, 0x4e, 0x2e})), "pickle offset 4: STOP with 2 values on the stack");
  CHECK_THROWS_WITH(PyDocument(bytes({0x80, 4, 0x8a, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x2e})),
                    "pickle offset 2: LONG1 integer of 10 bytes is beyond 64 bits");
  CHECK_THROWS_WITH(PyDocument(bytes({0x80, 4, 0xff})), "pickle offset 2: unknown or unsupported opcode 0xff");
  // A list appended to itself is a cycle in Python; here it is only a pointer, never a leak.
  PyDocument cycle(bytes({0x80, 4, 0x5d, 0x94, 0x68, 0, 0x61, 0x2e}));
  CHECK(cycle.root().items().at(0) == &cycle.root());
}

TEST_CASE("pickle: the real snapshots in ../shared parse, frames shared through the memo", "[snapshot]") {
  const std::string dir = TORCH_SNAPSHOTS_DIR;
  if (!std::filesystem::exists(dir)) {
    WARN("skipped: " << dir << " is absent (the snapshots live in the project's shared folder)");
    return;
  }
  struct Expected {
    const char* file;
    std::size_t entries, segments;  // as ../shared/torch-snapshots/README.md states
  };
  for (const Expected& x :
       {Expected{"kk_memory_ctx128_fullstep.pickle", 19342, 1010}, Expected{"silmont_forward_bf16_128.pickle", 2811, 0},
        Expected{"silmont_mem_snapshot.pickle", 97, 9}, Expected{"voxelflex_dump_snapshot.pickle", 0, 0}}) {
    INFO(x.file);
    std::string data = slurp(dir + "/" + x.file);
    PyDocument doc(data);
    const PyValue& root = doc.root();
    REQUIRE(root.is(Kind::Dict));
    for (const char* key : {"segments", "device_traces", "allocator_settings", "external_annotations"})
      CHECK(root.get(key) != nullptr);
    const PyValue* traces = root.get("device_traces");
    REQUIRE(traces->is(Kind::List));
    std::size_t entries = 0;
    for (const PyValue* device : traces->items()) entries += device->size();
    CHECK(entries == x.entries);
    if (x.segments) CHECK(root.get("segments")->size() == x.segments);
    // Far fewer values than opcodes' worth of frames: the memo shares them.
    CHECK(doc.value_count() < data.size() / 4);
  }
}

TEST_CASE("pickle: a long list of single APPENDs reads in one pass; memory stays a small multiple of the file",
          "[snapshot][hostile]") {
  // 3,000,000 APPENDs (9 MB): each used to hash the whole list again (10 MB took over 10 s).
  constexpr std::size_t kItems = 3'000'000;
  std::string appends = bytes({0x80, 4, 0x5d});  // PROTO 4, EMPTY_LIST
  appends.reserve(3 + kItems * 3 + 1);
  for (std::size_t i = 0; i < kItems; ++i) appends += bytes({0x4b, static_cast<int>(i % 256), 0x61});  // BININT1 i, APPEND
  appends += '.';
  const PyDocument list(appends);
  REQUIRE(list.root().size() == kItems);
  CHECK(list.root().items()[kItems - 1]->integer == static_cast<std::int64_t>((kItems - 1) % 256));

  // 20 MB of empty dicts or of None: one value per byte, refused with a line rather than
  // read into gigabytes (1.33 GB and 1.65 GB resident before).
  const std::string message = "the document holds more values than its size allows (over 152 MiB in memory): not a snapshot";
  for (int opcode : {0x7d, 0x4e}) {
    std::string flood = bytes({0x80, 4}) + std::string(20'000'000, static_cast<char>(opcode)) + ".";
    CHECK_THROWS_WITH(PyDocument(flood), message);
  }
}
