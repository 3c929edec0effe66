// The JSON form of a snapshot, read with nlohmann's SAX parser straight into the
// document's arena: no intermediate json tree, and nesting bounded so a hostile file
// cannot exhaust the stack or the heap beyond its own size.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "document_readers.hpp"

namespace memlens::snapshot {

using Kind = PyValue::Kind;

class JsonBuilder final : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit JsonBuilder(PyDocument& doc) : doc_(doc) {}

  const PyValue* root() const { return root_; }

  bool null() override { return add(make(Kind::None)); }
  bool boolean(bool b) override {
    PyValue* v = make(Kind::Bool);
    v->boolean = b;
    return add(v);
  }
  bool number_integer(number_integer_t n) override {
    PyValue* v = make(Kind::Int);
    v->integer = n;
    return add(v);
  }
  bool number_unsigned(number_unsigned_t n) override {
    PyValue* v = make(Kind::Int);
    v->integer = static_cast<std::int64_t>(n);
    v->unsigned64 = n > static_cast<std::uint64_t>(INT64_MAX);
    return add(v);
  }
  bool number_float(number_float_t x, const string_t&) override {
    PyValue* v = make(Kind::Float);
    v->real = x;
    return add(v);
  }
  bool string(string_t& s) override {
    if (s.size() > 0xffffffffu) return fail("a string of more than 4 GiB");
    return add(doc_.make_text(Kind::String, s));
  }
  bool binary(binary_t&) override { return fail("binary values are not JSON"); }
  bool start_object(std::size_t) override { return open(Kind::Dict); }
  bool key(string_t& k) override { return string(k); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(Kind::List); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    // nlohmann's message repeats the position before its first ": "; keep the reason whole,
    // and the input bytes it quotes as text (a byte that is not UTF-8 as \xNN).
    std::string why = e.what(), shown;
    if (auto colon = why.find(": "); colon != std::string::npos) why = why.substr(colon + 2);
    for (unsigned char c : why) {
      if (c >= 0x20 && c < 0x7f) {
        shown += static_cast<char>(c);
      } else {
        char hex[5];
        std::snprintf(hex, sizeof hex, "\\x%02x", c);
        shown += hex;
      }
    }
    throw SnapshotError("JSON offset " + std::to_string(position) + ": " + shown);
  }

 private:
  PyValue* make(Kind k) { return doc_.make(k); }
  bool add(PyValue* v) {
    if (open_.empty()) root_ = v;
    else open_.back()->container->items.push_back(v);
    return true;
  }
  bool open(Kind k) {
    if (open_.size() >= kMaxJsonDepth) return fail("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    PyValue* v = make(k);
    add(v);
    open_.push_back(v);
    return true;
  }
  bool close() {
    open_.pop_back();
    return true;
  }
  [[noreturn]] bool fail(const std::string& why) { throw SnapshotError("JSON: " + why); }

  PyDocument& doc_;
  std::vector<PyValue*> open_;
  const PyValue* root_ = nullptr;
};

const PyValue* read_json(PyDocument& doc, std::string_view text) {
  JsonBuilder builder(doc);
  nlohmann::json::sax_parse(text.begin(), text.end(), &builder);
  return builder.root();
}

}  // namespace memlens::snapshot
