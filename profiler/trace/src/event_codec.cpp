#include "event_codec.hpp"

#include "event_fields.hpp"

#include <limits>
#include <type_traits>
#include <vector>

namespace memlens::profiler::codec {

namespace {

using event_fields::fields;

struct Writer {
  static constexpr bool kNamesOnly = false;
  char*& out;
  DeltaState& st;
  void site(std::uint32_t& v) { put_varint(out, v); }
  void stack(std::uint32_t& v) { put_varint(out, v); }
  void name(std::uint32_t& v) { put_varint(out, v); }
  void device(const char*, std::uint8_t& v) { put_varint(out, v); }
  void u(const char*, std::uint64_t& v) { put_varint(out, v); }
  void s(const char*, std::int64_t& v) { put_varint(out, zigzag(v)); }
  template <class T>
  void small(const char*, T& v) {
    put_varint(out, static_cast<std::uint64_t>(v));
  }
  template <class E>
  void enumeration(const char*, E& v, std::size_t) {
    put_varint(out, static_cast<std::uint64_t>(v));
  }
  void flag(const char*, bool& v) { put_varint(out, v ? 1 : 0); }
  void address(const char*, std::uint64_t& v) {
    put_varint(out, zigzag(static_cast<std::int64_t>(v - st.address)));
    st.address = v;
  }
  void storage(const char*, std::uint64_t& v) {
    put_varint(out, zigzag(static_cast<std::int64_t>(v - st.storage)));
    st.storage = v;
  }
  void shape(const char*, ShapeRecord& r) {
    put_varint(out, r.ndim);
    for (int i = 0; i < r.ndim; ++i) put_varint(out, zigzag(r.dims[static_cast<std::size_t>(i)]));
  }
  // The strides share the sizes' dim count.
  void tensor(const char* name, TensorRecord& t) {
    shape(name, t.sizes);
    for (int i = 0; i < t.sizes.ndim; ++i) put_varint(out, zigzag(t.strides.dims[static_cast<std::size_t>(i)]));
    enumeration(name, t.dtype, kScalarTypeCount), device(name, t.device);
    storage(name, t.storage), s(name, t.offset);
  }
};

// A field out of range ends the chunk; kept out of line so the fields' checks stay small.
[[noreturn, gnu::cold, gnu::noinline]] void out_of_range(const char* name, std::uint64_t value) {
  throw TraceError(std::string(name) + " " + std::to_string(value) + " out of range");
}

struct Reader {
  static constexpr bool kNamesOnly = false;
  Input& in;
  DeltaState& st;
  void site(std::uint32_t& v) { small("site", v); }
  void stack(std::uint32_t& v) { small("stack", v); }
  void name(std::uint32_t& v) { small("name", v); }
  void device(const char* n, std::uint8_t& v) { small(n, v); }
  void u(const char*, std::uint64_t& v) { v = in.varint(); }
  void s(const char*, std::int64_t& v) { v = unzigzag(in.varint()); }
  template <class T>
  void small(const char* name, T& v) {
    std::uint64_t x = in.varint();
    if (x > static_cast<std::uint64_t>(std::numeric_limits<std::make_unsigned_t<T>>::max())) [[unlikely]]
      out_of_range(name, x);
    v = static_cast<T>(x);
  }
  template <class E>
  void enumeration(const char* name, E& v, std::size_t count) {
    std::uint64_t x = in.varint();
    if (x >= count) [[unlikely]]
      out_of_range(name, x);
    v = static_cast<E>(x);
  }
  void flag(const char* name, bool& v) {
    std::uint64_t x = in.varint();
    if (x > 1) [[unlikely]]
      out_of_range(name, x);
    v = x == 1;
  }
  void address(const char*, std::uint64_t& v) {
    v = st.address + static_cast<std::uint64_t>(unzigzag(in.varint()));
    st.address = v;
  }
  void storage(const char*, std::uint64_t& v) {
    v = st.storage + static_cast<std::uint64_t>(unzigzag(in.varint()));
    st.storage = v;
  }
  // `r` holds the slot's last shape: only the dims it had beyond the new ndim are cleared.
  void shape(const char* name, ShapeRecord& r) {
    const std::uint8_t before = r.ndim;
    small(name, r.ndim);
    if (r.ndim > ShapeRecord::kMaxDims) [[unlikely]] {
      r.ndim = 0;
      throw TraceError(std::string(name) + " with more than 8 dims");
    }
    for (int i = 0; i < r.ndim; ++i) r.dims[static_cast<std::size_t>(i)] = unzigzag(in.varint());
    for (int i = r.ndim; i < before; ++i) r.dims[static_cast<std::size_t>(i)] = 0;
  }
  void tensor(const char* name, TensorRecord& t) {
    const std::uint8_t before = t.strides.ndim;
    shape(name, t.sizes);
    t.strides.ndim = t.sizes.ndim;
    for (int i = 0; i < t.sizes.ndim; ++i) t.strides.dims[static_cast<std::size_t>(i)] = unzigzag(in.varint());
    for (int i = t.sizes.ndim; i < before; ++i) t.strides.dims[static_cast<std::size_t>(i)] = 0;
    enumeration(name, t.dtype, kScalarTypeCount), device(name, t.device);
    storage(name, t.storage), s(name, t.offset);
  }
};

// Collects the names, for the docs and the test that holds the docs to the codec.
struct Namer {
  static constexpr bool kNamesOnly = true;
  std::vector<std::string_view>& names;
  void site(std::uint32_t&) { names.push_back("site"); }
  void stack(std::uint32_t&) { names.push_back("stack"); }
  void name(std::uint32_t&) { names.push_back("name"); }
  void device(const char* n, std::uint8_t&) { names.push_back(n); }
  template <class T>
  void u(const char* n, T&) {
    names.push_back(n);
  }
  template <class T>
  void s(const char* n, T&) {
    names.push_back(n);
  }
  template <class T>
  void small(const char* n, T&) {
    names.push_back(n);
  }
  template <class E>
  void enumeration(const char* n, E&, std::size_t) {
    names.push_back(n);
  }
  void flag(const char* n, bool&) { names.push_back(n); }
  void address(const char* n, std::uint64_t&) { names.push_back(n); }
  void storage(const char* n, std::uint64_t&) { names.push_back(n); }
  void shape(const char* n, ShapeRecord&) { names.push_back(n); }
  void tensor(const char* n, TensorRecord&) { names.push_back(n); }
};

}  // namespace

void encode(std::string& out, const Event& e, DeltaState& st) {
  char bytes[kMaxEventBytes];
  char* p = bytes;
  *p++ = static_cast<char>(e.kind);
  put_varint(p, e.time_ns - st.time);
  st.time = e.time_ns;
  put_varint(p, e.thread);
  put_varint(p, e.device);
  Writer w{p, st};
  fields(w, const_cast<Event&>(e));  // the writer only reads: fields() takes references for both directions
  out.append(bytes, static_cast<std::size_t>(p - bytes));
}

EventSlots::EventSlots() {
  for (std::size_t k = 0; k < slots_.size(); ++k) slots_[k].reset(static_cast<EventKind>(k + 1));
}

const Event& decode(Input& in, DeltaState& st, EventSlots& slots) {
  std::uint64_t kind = in.varint();
  if (!is_event_kind(kind)) throw TraceError("unknown event kind " + std::to_string(kind));
  Event& e = slots[static_cast<EventKind>(kind)];
  e.time_ns = st.time + in.varint();
  st.time = e.time_ns;
  std::uint64_t thread = in.varint();
  if (thread > 0xffffffffu) throw TraceError("thread number out of range");
  e.thread = static_cast<std::uint32_t>(thread);
  Reader r{in, st};
  r.small("device", e.device);
  fields(r, e);
  return e;
}

}  // namespace memlens::profiler::codec

namespace memlens::profiler {

std::vector<std::string_view> field_names(EventKind k) {
  std::vector<std::string_view> names;
  codec::Namer namer{names};
  Event e;
  e.reset(k);
  event_fields::fields(namer, e);
  return names;
}

}  // namespace memlens::profiler
