#pragma once
// The subset of Python's pickle format that PyTorch memory snapshots use (protocols 2 to
// 5: dicts, lists, tuples, strings, bytes, ints, floats, booleans, None, and the memo
// that lets one frame dict be shared by thousands of stacks). Anything that would build
// or call Python objects (GLOBAL, REDUCE, BUILD, ...) is refused with its opcode and
// offset: reading a snapshot never executes anything.
#include <cstdint>
#include <deque>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace memlens::snapshot {

// "pickle offset 1234: opcode GLOBAL (0x63) is not allowed: ..." (one line).
class PickleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One Python value. Containers hold pointers into the PickleDocument that owns every
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
  // An Int as a signed or unsigned 64-bit number; throws PickleError when it does not fit.
  std::int64_t as_i64() const;
  std::uint64_t as_u64() const;
};

std::string_view kind_name(PyValue::Kind k);  // "dict", "list", ...

class PickleDocument {
 public:
  // Parses the whole pickle; throws PickleError naming the offset of the first problem.
  // Memory is bounded by the input: each opcode makes at most one value.
  explicit PickleDocument(std::string_view bytes);
  PickleDocument(const PickleDocument&) = delete;
  PickleDocument& operator=(const PickleDocument&) = delete;

  const PyValue& root() const { return *root_; }
  std::size_t value_count() const { return values_.size(); }

 private:
  std::deque<PyValue> values_;  // stable addresses
  const PyValue* root_ = nullptr;
  friend class PickleParser;
};

}  // namespace memlens::snapshot
