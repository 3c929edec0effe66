// An iterative reader for the pickle opcodes PyTorch's snapshots use; every other opcode
// is refused. The stack holds values owned by the document, so the memo shares them.
#include "document_readers.hpp"

#include <absl/container/flat_hash_set.h>
#include <absl/hash/hash.h>

#include <array>
#include <bit>
#include <cstring>

namespace memlens::snapshot {

namespace {

using Kind = PyValue::Kind;

const char* opcode_name(std::uint8_t op) {
  switch (op) {
    case 0x63:
      return "GLOBAL";
    case 0x93:
      return "STACK_GLOBAL";
    case 0x52:
      return "REDUCE";
    case 0x62:
      return "BUILD";
    case 0x81:
      return "NEWOBJ";
    case 0x92:
      return "NEWOBJ_EX";
    case 0x69:
      return "INST";
    case 0x6f:
      return "OBJ";
    case 0x50:
      return "PERSID";
    case 0x51:
      return "BINPERSID";
    case 0x82:
    case 0x83:
    case 0x84:
      return "EXT";
    default:
      return nullptr;
  }
}

}  // namespace

class PickleParser {
 public:
  PickleParser(PyDocument& doc, std::string_view bytes, const PyDocument::Progress& progress)
      : doc_(doc), p_(bytes), progress_(progress) {}

  const PyValue* run() {
    while (true) {
      if (at_ >= p_.size()) fail(at_, "the pickle ends without STOP");
      const std::size_t op_at = at_;
      if (progress_ && at_ >= next_progress_) progress_(at_), next_progress_ = at_ + kProgressStep;
      const auto op = static_cast<std::uint8_t>(p_[at_++]);
      switch (op) {
        case 0x80:
          take(1);
          break;  // PROTO
        case 0x95:
          take(8);
          break;      // FRAME: a length hint, nothing to build
        case 0x2e: {  // STOP
          if (stack_.size() != 1 || !marks_.empty())
            fail(op_at, "STOP with " + std::to_string(stack_.size()) + " values on the stack");
          return stack_.back();
        }
        case 0x28:
          marks_.push_back(stack_.size());
          break;  // MARK
        case 0x7d:
          push(make(Kind::Dict));
          break;  // EMPTY_DICT
        case 0x5d:
          push(make(Kind::List));
          break;  // EMPTY_LIST
        case 0x29:
          push(make(Kind::Tuple));
          break;  // EMPTY_TUPLE
        case 0x4e:
          push(make(Kind::None));
          break;  // NONE
        case 0x88:
        case 0x89: {  // NEWTRUE, NEWFALSE
          PyValue* v = make(Kind::Bool);
          v->boolean = op == 0x88;
          push(v);
          break;
        }
        case 0x4b:
          push(small_int(static_cast<std::uint8_t>(take(1)[0])));
          break;  // BININT1
        case 0x4d:
          push(integer(le<std::uint16_t>(take(2))));
          break;  // BININT2
        case 0x4a:
          push(integer(le<std::int32_t>(take(4))));
          break;  // BININT
        case 0x8a:
          push(long1(op_at));
          break;      // LONG1
        case 0x47: {  // BINFLOAT (big-endian)
          std::uint64_t bits = be64(take(8));
          PyValue* v = make(Kind::Float);
          v->real = std::bit_cast<double>(bits);
          push(v);
          break;
        }
        case 0x8c:
          push(text(Kind::String, static_cast<std::uint8_t>(take(1)[0]), op_at));
          break;  // SHORT_BINUNICODE
        case 0x58:
          push(text(Kind::String, le<std::uint32_t>(take(4)), op_at));
          break;  // BINUNICODE
        case 0x8d:
          push(text(Kind::String, le<std::uint64_t>(take(8)), op_at));
          break;  // BINUNICODE8
        case 0x43:
          push(text(Kind::Bytes, static_cast<std::uint8_t>(take(1)[0]), op_at));
          break;  // SHORT_BINBYTES
        case 0x42:
          push(text(Kind::Bytes, le<std::uint32_t>(take(4)), op_at));
          break;  // BINBYTES
        case 0x8e:
          push(text(Kind::Bytes, le<std::uint64_t>(take(8)), op_at));
          break;  // BINBYTES8
        case 0x94:
          store(memo_count_, top(op_at), op_at);
          break;  // MEMOIZE
        case 0x71:
          store(static_cast<std::uint8_t>(take(1)[0]), top(op_at), op_at);
          break;  // BINPUT
        case 0x72:
          store(le<std::uint32_t>(take(4)), top(op_at), op_at);
          break;  // LONG_BINPUT
        case 0x68:
          push(memo(static_cast<std::uint8_t>(take(1)[0]), op_at));
          break;  // BINGET
        case 0x6a:
          push(memo(le<std::uint32_t>(take(4)), op_at));
          break;  // LONG_BINGET
        case 0x85:
        case 0x86:
        case 0x87: {  // TUPLE1..3
          std::size_t n = op - 0x84u;
          if (stack_.size() < n) fail(op_at, "TUPLE" + std::to_string(n) + " on a stack of " + std::to_string(stack_.size()));
          push(collect(Kind::Tuple, stack_.size() - n));
          break;
        }
        case 0x74:
          push(collect(Kind::Tuple, mark(op_at)));
          break;  // TUPLE
        case 0x6c:
          push(collect(Kind::List, mark(op_at)));
          break;      // LIST
        case 0x64: {  // DICT
          PyValue* d = collect(Kind::Dict, mark(op_at));
          if (d->container->items.size() % 2) fail(op_at, "DICT with an odd number of items");
          push(d);
          break;
        }
        case 0x61: {  // APPEND
          if (stack_.size() < 2) fail(op_at, "APPEND on a stack of " + std::to_string(stack_.size()));
          const PyValue* v = pop();
          PyValue* list = container(Kind::List, op_at);
          auto& items = items_to_change(list);
          items.push_back(v);
          // Only a list of one is shared here (what a pickler writes with APPEND): hashing a
          // list at every APPEND made a long one quadratic.
          if (items.size() == 1) share(list);
          break;
        }
        case 0x65: {  // APPENDS
          std::size_t from = mark(op_at);
          if (from == 0) fail(op_at, "APPENDS without a list below its mark");
          PyValue* list = stack_[from - 1];
          if (list->kind != Kind::List) fail(op_at, "APPENDS to a " + std::string(kind_name(list->kind)));
          auto& items = items_to_change(list);
          items.insert(items.end(), stack_.begin() + static_cast<std::ptrdiff_t>(from), stack_.end());
          stack_.resize(from);
          share(list);
          break;
        }
        case 0x73: {  // SETITEM
          if (stack_.size() < 3) fail(op_at, "SETITEM on a stack of " + std::to_string(stack_.size()));
          const PyValue* value = pop();
          const PyValue* key = pop();
          auto& items = items_to_change(container(Kind::Dict, op_at));
          items.push_back(key);
          items.push_back(value);
          break;
        }
        case 0x75: {  // SETITEMS
          std::size_t from = mark(op_at);
          if (from == 0) fail(op_at, "SETITEMS without a dict below its mark");
          if ((stack_.size() - from) % 2) fail(op_at, "SETITEMS with an odd number of items");
          PyValue* d = stack_[from - 1];
          if (d->kind != Kind::Dict) fail(op_at, "SETITEMS to a " + std::string(kind_name(d->kind)));
          auto& items = items_to_change(d);
          items.insert(items.end(), stack_.begin() + static_cast<std::ptrdiff_t>(from), stack_.end());
          stack_.resize(from);
          break;
        }
        default: {
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%02x", op);
          const char* name = opcode_name(op);
          if (name)
            fail(op_at, std::string("opcode ") + name + " (" + hex +
                            ") is not allowed: a memory snapshot holds only plain data, and memlens executes no pickle code");
          fail(op_at, std::string("unknown or unsupported opcode ") + hex);
        }
      }
    }
  }

 private:
  [[noreturn]] void fail(std::size_t at, const std::string& why) const {
    throw SnapshotError("pickle offset " + std::to_string(at) + ": " + why);
  }

  std::string_view take(std::size_t n) {
    if (n > p_.size() - at_) fail(at_, "the pickle ends inside an opcode's argument (" + std::to_string(n) + " bytes wanted)");
    std::string_view s = p_.substr(at_, n);
    at_ += n;
    return s;
  }
  template <class T>
  static T le(std::string_view b) {
    T v;
    std::memcpy(&v, b.data(), sizeof v);
    return v;
  }
  static std::uint64_t be64(std::string_view b) {
    std::uint64_t v = 0;
    for (char c : b) v = (v << 8) | static_cast<std::uint8_t>(c);
    return v;
  }

  PyValue* make(Kind k) { return doc_.make(k); }
  // 0 to 255 (streams, lines, flags) made once each: values are never changed after
  // they are made, so sharing them is safe.
  PyValue* small_int(std::uint8_t x) {
    if (!small_[x]) small_[x] = integer(x);
    return small_[x];
  }
  PyValue* integer(std::int64_t x) {
    PyValue* v = make(Kind::Int);
    v->integer = x;
    return v;
  }
  // Little-endian two's complement of n bytes. Nine bytes carry an unsigned 64-bit value
  // (a CUDA address of 2^63 or more); anything wider is refused.
  PyValue* long1(std::size_t op_at) {
    std::size_t n = static_cast<std::uint8_t>(take(1)[0]);
    std::string_view b = take(n);
    if (n == 0) return integer(0);
    if (n > 9 || (n == 9 && b[8] != 0)) fail(op_at, "LONG1 integer of " + std::to_string(n) + " bytes is beyond 64 bits");
    std::uint64_t u = 0;
    for (std::size_t i = std::min<std::size_t>(n, 8); i-- > 0;) u = (u << 8) | static_cast<std::uint8_t>(b[i]);
    PyValue* v = integer(0);
    if (n == 9) {
      v->integer = static_cast<std::int64_t>(u);
      v->unsigned64 = (u >> 63) != 0;
      return v;
    }
    if (n < 8 && (static_cast<std::uint8_t>(b[n - 1]) & 0x80)) u |= ~std::uint64_t{0} << (8 * n);  // sign-extend
    v->integer = static_cast<std::int64_t>(u);
    return v;
  }
  PyValue* text(Kind k, std::uint64_t n, std::size_t op_at) {
    if (n > p_.size() - at_)
      fail(op_at, "a " + std::string(kind_name(k)) + " of " + std::to_string(n) + " bytes in the " +
                      std::to_string(p_.size() - at_) + " bytes left");
    if (n > 0xffffffffu) fail(op_at, "a " + std::string(kind_name(k)) + " of " + std::to_string(n) + " bytes (at most 4 GiB)");
    return doc_.make_text(k, take(static_cast<std::size_t>(n)));
  }

  void push(PyValue* v) { stack_.push_back(v); }
  PyValue* pop() {
    PyValue* v = stack_.back();
    stack_.pop_back();
    return v;
  }
  PyValue* top(std::size_t op_at) {
    if (stack_.empty()) fail(op_at, "memoising from an empty stack");
    return stack_.back();
  }
  PyValue* memo(std::uint64_t i, std::size_t op_at) {
    if (i >= memo_.size() || !memo_[i]) fail(op_at, "memo entry " + std::to_string(i) + " was never stored");
    return memo_[i];
  }
  // Writers number memo entries 0, 1, 2, ...: a table indexed by them, bounded by the input.
  void store(std::uint64_t i, PyValue* v, std::size_t op_at) {
    if (i >= memo_.size()) {
      if (i > p_.size()) fail(op_at, "memo index " + std::to_string(i) + " is beyond what the input can hold");
      memo_.resize(static_cast<std::size_t>(i) + 1, nullptr);
    }
    if (!memo_[i]) ++memo_count_;
    memo_[i] = v;
  }
  std::size_t mark(std::size_t op_at) {
    if (marks_.empty()) fail(op_at, "no MARK to collect from");
    std::size_t m = marks_.back();
    marks_.pop_back();
    if (m > stack_.size()) fail(op_at, "MARK above the stack");
    return m;
  }
  PyValue* container(Kind k, std::size_t op_at) {
    PyValue* c = stack_.back();
    if (c->kind != k)
      fail(op_at, "adding to a " + std::string(kind_name(c->kind)) + " where a " + std::string(kind_name(k)) + " belongs");
    return c;
  }
  // A new container of the values from stack position `from` up.
  PyValue* collect(Kind k, std::size_t from) {
    PyValue* v = make(k);
    v->container->items.assign(stack_.begin() + static_cast<std::ptrdiff_t>(from), stack_.end());
    stack_.resize(from);
    if (k == Kind::List) share(v);
    return v;
  }

  // Lists of equal items share one container: PyTorch writes a fresh frame list per trace
  // entry, and most are alike (the kk snapshot: 19,342 lists, 323 different).
  struct ItemsHash {
    std::size_t operator()(const PyContainer* c) const { return absl::HashOf(c->items); }
  };
  struct ItemsEq {
    bool operator()(const PyContainer* a, const PyContainer* b) const { return a->items == b->items; }
  };
  static constexpr std::size_t kMaxSharedList = 4096;  // frame lists are far shorter
  void share(PyValue* list) {
    PyContainer* own = list->container;
    if (own->interned || own->items.empty() || own->items.size() > kMaxSharedList) return;
    auto [it, fresh] = lists_.insert(own);
    if (fresh) {
      own->interned = true;
      return;
    }
    list->container = *it;
    (*it)->shared = true;
    doc_.recycle(own);  // only `list` used it
  }
  std::vector<const PyValue*>& items_to_change(PyValue* v) {
    if (v->container->interned) {
      lists_.erase(v->container);  // its hash is about to change
      v->container->interned = false;
    }
    return doc_.change(v);
  }

  static constexpr std::size_t kProgressStep = 4 << 20;
  PyDocument& doc_;
  std::string_view p_;
  const PyDocument::Progress& progress_;
  std::size_t next_progress_ = kProgressStep;
  std::size_t at_ = 0;
  std::vector<PyValue*> stack_;
  std::vector<std::size_t> marks_;
  absl::flat_hash_set<PyContainer*, ItemsHash, ItemsEq> lists_;
  std::array<PyValue*, 256> small_{};
  std::vector<PyValue*> memo_;  // by memo index; null where none was stored
  std::size_t memo_count_ = 0;  // entries stored (MEMOIZE's next index, as in CPython)
};

const PyValue* read_pickle(PyDocument& doc, std::string_view bytes, const PyDocument::Progress& progress) {
  return PickleParser(doc, bytes, progress).run();
}

}  // namespace memlens::snapshot
