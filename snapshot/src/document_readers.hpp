#pragma once
// The two encodings of a snapshot, each filling a PyDocument's arena and returning the root.
#include "memlens/snapshot/py_document.hpp"

namespace memlens::snapshot {

const PyValue* read_pickle(PyDocument& doc, std::string_view bytes, const PyDocument::Progress& progress);
const PyValue* read_json(PyDocument& doc, std::string_view text);

}  // namespace memlens::snapshot
