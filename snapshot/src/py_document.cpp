// Python values and the document that owns them; the readers of each encoding fill it.
#include "memlens/snapshot/py_document.hpp"

#include "document_readers.hpp"

#include <algorithm>
#include <cstring>

namespace memlens::snapshot {

using Kind = PyValue::Kind;

std::string_view kind_name(Kind k) {
  switch (k) {
    case Kind::None:
      return "None";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::String:
      return "str";
    case Kind::Bytes:
      return "bytes";
    case Kind::List:
      return "list";
    case Kind::Tuple:
      return "tuple";
    case Kind::Dict:
      return "dict";
  }
  return "?";
}

const std::vector<const PyValue*>& PyValue::items() const {
  static const std::vector<const PyValue*> none;
  return is_container() ? container->items : none;
}

const PyValue* PyValue::get(std::string_view key) const {
  if (kind != Kind::Dict) return nullptr;
  const auto& v = container->items;
  // Later entries win, as in Python; snapshots' dicts are small.
  for (std::size_t i = v.size(); i >= 2; i -= 2)
    if (v[i - 2]->kind == Kind::String && v[i - 2]->text() == key) return v[i - 1];
  return nullptr;
}

std::int64_t PyValue::as_i64() const {
  if (kind == Kind::Bool) return boolean;
  if (kind != Kind::Int || unsigned64) throw SnapshotError("expected an int of 64 bits, found " + std::string(kind_name(kind)));
  return integer;
}

std::uint64_t PyValue::as_u64() const {
  if (kind == Kind::Int && (unsigned64 || integer >= 0)) return static_cast<std::uint64_t>(integer);
  throw SnapshotError("expected a non-negative int, found " +
                      (kind == Kind::Int ? std::to_string(integer) : std::string(kind_name(kind))));
}

// Each value: itself, a container if it is one, and its place in a container, the stack or the memo.
constexpr std::size_t kValueCost = sizeof(PyValue) + sizeof(void*);
constexpr std::size_t kMemoryPerInputByte = 8, kMemoryFloor = 64 << 20;

PyDocument::PyDocument(std::string_view bytes, Encoding encoding, const Progress& progress)
    : budget_(std::max(kMemoryFloor, bytes.size() * kMemoryPerInputByte)) {
  root_ = encoding == Encoding::Pickle ? read_pickle(*this, bytes, progress) : read_json(*this, bytes);
}

void PyDocument::charge(std::size_t bytes) {
  used_ += bytes;
  if (used_ > budget_)
    throw SnapshotError("the document holds more values than its size allows (over " + std::to_string(budget_ >> 20) +
                        " MiB in memory): not a snapshot");
}

PyValue* PyDocument::make(Kind k) {
  charge(kValueCost);
  PyValue& v = values_.emplace_back();
  v.kind = k;
  if (v.is_container()) v.container = new_container();
  return &v;
}

PyContainer* PyDocument::new_container() {
  charge(sizeof(PyContainer));
  if (spare_.empty()) return &containers_.emplace_back();
  PyContainer* c = spare_.back();
  spare_.pop_back();
  return c;
}

void PyDocument::recycle(PyContainer* c) {
  std::vector<const PyValue*>().swap(c->items);
  c->shared = c->interned = false;
  spare_.push_back(c);
}

PyValue* PyDocument::make_text(Kind k, std::string_view text) {
  // Text goes into 1 MiB blocks (a longer text gets its own), so the input can go.
  constexpr std::size_t kBlock = 1 << 20;
  if (text.size() > text_left_) {
    std::size_t n = std::max(kBlock, text.size());
    text_blocks_.push_back(std::make_unique<char[]>(n));
    text_at_ = text_blocks_.back().get();
    text_left_ = n;
  }
  charge(text.size());
  PyValue* v = make(k);
  if (!text.empty()) std::memcpy(text_at_, text.data(), text.size());
  v->chars = text_at_;
  v->length = static_cast<std::uint32_t>(text.size());
  text_at_ += text.size();
  text_left_ -= text.size();
  return v;
}

std::vector<const PyValue*>& PyDocument::change(PyValue* v) {
  if (v->container->shared) {
    const std::vector<const PyValue*>& items = v->container->items;
    charge(items.size() * sizeof(void*));
    v->container = new_container();
    v->container->items = items;
  }
  return v->container->items;
}

}  // namespace memlens::snapshot
