// Python values and the document that owns them; the readers of each encoding fill it.
#include "memlens/snapshot/py_document.hpp"

#include "document_readers.hpp"

namespace memlens::snapshot {

using Kind = PyValue::Kind;

std::string_view kind_name(Kind k) {
  switch (k) {
    case Kind::None: return "None";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::Bytes: return "bytes";
    case Kind::List: return "list";
    case Kind::Tuple: return "tuple";
    case Kind::Dict: return "dict";
  }
  return "?";
}

const PyValue* PyValue::get(std::string_view key) const {
  if (kind != Kind::Dict) return nullptr;
  // Later entries win, as in Python; snapshots' dicts are small.
  for (std::size_t i = items.size(); i >= 2; i -= 2)
    if (items[i - 2]->kind == Kind::String && items[i - 2]->text == key) return items[i - 1];
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

PyDocument::PyDocument(std::string_view bytes, Encoding encoding) {
  root_ = encoding == Encoding::Pickle ? read_pickle(*this, bytes) : read_json(*this, bytes);
}

}  // namespace memlens::snapshot
