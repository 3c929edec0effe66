#pragma once
// A PyTorch memory snapshot as plain Python values, read from either of its encodings:
// - the subset of Python's pickle format the snapshots use (protocols 2 to 5: dicts,
//   lists, tuples, strings, bytes, ints, floats, booleans, None, and the memo that lets
//   one frame dict be shared by thousands of stacks). Anything that would build or call
//   Python objects (GLOBAL, REDUCE, BUILD, ...) is refused with its opcode and offset:
//   reading a snapshot never executes anything;
// - the JSON form of the same document, which newer memory_viz pages accept.
#include <cstdint>
#include <deque>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace memlens::snapshot {

// "pickle offset 1234: opcode GLOBAL (0x63) is not allowed: ..." (one line). Also thrown
// for a document of the wrong shape ("device_traces[0][3]: expected a dict, found list").
class SnapshotError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One Python value. Containers hold pointers into the PyDocument that owns every
// value, so a memoised value shared by many containers exists once.
struct PyValue {
  enum class Kind : std::uint8_t { None, Bool, Int, Float, String, Bytes, List, Tuple, Dict };
  Kind kind = Kind::None;
  bool unsigned64 = false;  // an Int of 2^63 or more (LONG1 of 9 bytes: PyTorch's addresses)
  union {
    bool boolean;
    std::int64_t integer;  // as_u64() when unsigned64
    double real;
  };
  std::string text;                    // String (UTF-8) and Bytes
  std::vector<const PyValue*> items;   // List and Tuple; a Dict's keys and values, alternating
  PyValue() : integer(0) {}

  bool is(Kind k) const { return kind == k; }
  std::size_t size() const { return kind == Kind::Dict ? items.size() / 2 : items.size(); }
  // A Dict's value for a string key; nullptr when absent or not a Dict.
  const PyValue* get(std::string_view key) const;
  // An Int as a signed or unsigned 64-bit number; throws SnapshotError when it does not fit.
  std::int64_t as_i64() const;
  std::uint64_t as_u64() const;
};

std::string_view kind_name(PyValue::Kind k);  // "dict", "list", ...

class PyDocument {
 public:
  enum class Encoding : std::uint8_t { Pickle, Json };
  // Parses the whole input; throws SnapshotError naming the offset of the first problem.
  // Memory is bounded by the input: each opcode (JSON token) makes at most one value,
  // and JSON nests at most kMaxJsonDepth deep.
  explicit PyDocument(std::string_view bytes, Encoding encoding = Encoding::Pickle);
  PyDocument(const PyDocument&) = delete;
  PyDocument& operator=(const PyDocument&) = delete;

  const PyValue& root() const { return *root_; }
  std::size_t value_count() const { return values_.size(); }

 private:
  std::deque<PyValue> values_;  // stable addresses
  const PyValue* root_ = nullptr;
  friend class PickleParser;
  friend class JsonBuilder;
};

inline constexpr std::size_t kMaxJsonDepth = 64;  // a snapshot nests 6 deep

}  // namespace memlens::snapshot
