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
#include <functional>
#include <memory>
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

struct PyValue;

// The items of a list, tuple or dict. Identical frame lists (PyTorch writes one per trace
// entry, most of them alike) share one; a shared one is copied before it changes.
struct PyContainer {
  std::vector<const PyValue*> items;  // a Dict's keys and values, alternating
  bool shared = false;
  bool interned = false;  // in the reader's table of lists to share
};

// One Python value, 16 bytes: a snapshot holds millions. Containers hold pointers into the
// PyDocument that owns every value, so a memoised value shared by many exists once.
struct PyValue {
  enum class Kind : std::uint8_t { None, Bool, Int, Float, String, Bytes, List, Tuple, Dict };
  Kind kind = Kind::None;
  bool unsigned64 = false;   // an Int of 2^63 or more (LONG1 of 9 bytes: PyTorch's addresses)
  std::uint32_t length = 0;  // String and Bytes: bytes of text
  union {
    bool boolean;
    std::int64_t integer;  // as_u64() when unsigned64
    double real;
    const char* chars;       // String (UTF-8) and Bytes, owned by the document
    PyContainer* container;  // List, Tuple and Dict; never null
  };
  PyValue() : integer(0) {}

  bool is(Kind k) const { return kind == k; }
  bool is_container() const { return kind == Kind::List || kind == Kind::Tuple || kind == Kind::Dict; }
  std::string_view text() const {
    return kind == Kind::String || kind == Kind::Bytes ? std::string_view(chars, length) : std::string_view();
  }
  const std::vector<const PyValue*>& items() const;  // empty unless a container
  std::size_t size() const { return kind == Kind::Dict ? items().size() / 2 : items().size(); }
  // A Dict's value for a string key; nullptr when absent or not a Dict.
  const PyValue* get(std::string_view key) const;
  // An Int as a signed or unsigned 64-bit number; throws SnapshotError when it does not fit.
  std::int64_t as_i64() const;
  std::uint64_t as_u64() const;
};
static_assert(sizeof(PyValue) == 16, "a value per pickle opcode: keep it small");

std::string_view kind_name(PyValue::Kind k);  // "dict", "list", ...

class PyDocument {
 public:
  enum class Encoding : std::uint8_t { Pickle, Json };
  // Told how far the reader has got in the input (every few MiB): nothing before that
  // offset is read again, so a caller reading from a mapped file can let it go.
  using Progress = std::function<void(std::size_t consumed)>;
  // Parses the whole input; throws SnapshotError naming the offset of the first problem.
  // Memory is bounded by the input: each opcode (JSON token) makes at most one value,
  // text is copied out of the input, and JSON nests at most kMaxJsonDepth deep.
  explicit PyDocument(std::string_view bytes, Encoding encoding = Encoding::Pickle, const Progress& progress = {});
  PyDocument(const PyDocument&) = delete;
  PyDocument& operator=(const PyDocument&) = delete;

  const PyValue& root() const { return *root_; }
  std::size_t value_count() const { return values_.size(); }
  std::size_t container_count() const { return containers_.size(); }

 private:
  PyValue* make(PyValue::Kind k);  // a container kind gets an empty container
  PyValue* make_text(PyValue::Kind k, std::string_view text);
  // The items of `v` to change: copied first when shared.
  std::vector<const PyValue*>& change(PyValue* v);
  // A container no value uses any more, kept for the next one made.
  void recycle(PyContainer* c);
  PyContainer* new_container();

  // What the values may take, a small multiple of the input (a real snapshot takes about
  // its own size): a document of millions of empty dicts is refused, not read into gigabytes.
  void charge(std::size_t bytes);
  std::size_t budget_ = 0, used_ = 0;

  std::deque<PyValue> values_;  // stable addresses
  std::deque<PyContainer> containers_;
  std::vector<PyContainer*> spare_;                   // recycled containers
  std::vector<std::unique_ptr<char[]>> text_blocks_;  // text, copied out of the input
  char* text_at_ = nullptr;
  std::size_t text_left_ = 0;
  const PyValue* root_ = nullptr;
  friend class PickleParser;
  friend class JsonBuilder;
};

inline constexpr std::size_t kMaxJsonDepth = 64;  // a snapshot nests 6 deep

}  // namespace memlens::snapshot
