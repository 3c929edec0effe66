#include "event_codec.hpp"

#include <limits>
#include <type_traits>

namespace memlens::profiler::codec {

namespace {

struct Writer {
  std::string& out;
  DeltaState& st;
  void u(std::uint64_t& v) { put_varint(out, v); }
  void s(std::int64_t& v) { put_varint(out, zigzag(v)); }
  template <class T>
  void small(T& v) { put_varint(out, static_cast<std::uint64_t>(v)); }
  void small(bool& v) { put_varint(out, v ? 1 : 0); }
  void address(std::uint64_t& v) {
    put_varint(out, zigzag(static_cast<std::int64_t>(v - st.address)));
    st.address = v;
  }
  void shape(ShapeRecord& r) {
    put_varint(out, r.ndim);
    for (int i = 0; i < r.ndim; ++i) put_varint(out, zigzag(r.dims[static_cast<std::size_t>(i)]));
  }
};

struct Reader {
  Input& in;
  DeltaState& st;
  void u(std::uint64_t& v) { v = in.varint(); }
  void s(std::int64_t& v) { v = unzigzag(in.varint()); }
  template <class T>
  void small(T& v) {
    std::uint64_t x = in.varint();
    if (x > static_cast<std::uint64_t>(std::numeric_limits<std::make_unsigned_t<T>>::max())) throw TraceError("field out of range");
    v = static_cast<T>(x);
  }
  void small(bool& v) {
    std::uint64_t x = in.varint();
    if (x > 1) throw TraceError("field out of range");
    v = x == 1;
  }
  void address(std::uint64_t& v) {
    v = st.address + static_cast<std::uint64_t>(unzigzag(in.varint()));
    st.address = v;
  }
  void shape(ShapeRecord& r) {
    small(r.ndim);
    if (r.ndim > ShapeRecord::kMaxDims) throw TraceError("shape with more than 8 dims");
    for (int i = 0; i < r.ndim; ++i) r.dims[static_cast<std::size_t>(i)] = unzigzag(in.varint());
  }
};

// Zeroes the fields it walks (of the event's current kind).
struct Clearer {
  template <class T>
  void u(T& v) { v = 0; }
  template <class T>
  void s(T& v) { v = 0; }
  template <class T>
  void small(T& v) { v = T{}; }
  void address(std::uint64_t& v) { v = 0; }
  void shape(ShapeRecord& r) {
    for (int i = 0; i < r.ndim; ++i) r.dims[static_cast<std::size_t>(i)] = 0;
    r.ndim = 0;
  }
};

// The fields of each kind, in file order. Both directions walk this one list.
template <class IO>
void fields(IO& io, Event& e) {
  using K = EventKind;
  switch (e.kind) {
    case K::SegmentAlloc:
    case K::SegmentFree:
      io.address(e.address), io.u(e.size), io.small(e.stream), io.small(e.sub);
      break;
    case K::Alloc:
      io.address(e.address), io.address(e.address2), io.u(e.size), io.u(e.requested);
      io.small(e.stream), io.u(e.storage), io.small(e.sub), io.small(e.site), io.small(e.stack);
      break;
    case K::FreeRequested:
    case K::FreeCompleted:
      io.address(e.address), io.u(e.size), io.small(e.stream), io.u(e.storage);
      break;
    case K::AllocFailed:
    case K::Oom:
      io.u(e.size), io.u(e.free_bytes), io.u(e.reserved), io.u(e.allocated), io.small(e.stream);
      io.small(e.site), io.small(e.stack);
      break;
    case K::View:
      io.u(e.tensor), io.u(e.storage), io.small(e.sub), io.shape(e.shape), io.shape(e.strides);
      io.s(e.offset), io.small(e.site), io.small(e.dtype);
      break;
    case K::Copy:
      io.small(e.device2), io.address(e.address), io.address(e.address2), io.u(e.size);
      io.small(e.sub), io.small(e.site);
      break;
    case K::Op: {
      io.small(e.name), io.small(e.n_inputs);
      if (e.n_inputs > e.inputs.size()) throw TraceError("op with more than 4 recorded inputs");
      for (std::size_t i = 0; i < e.n_inputs; ++i) io.shape(e.inputs[i]);
      io.shape(e.shape), io.u(e.size), io.small(e.broadcast), io.small(e.site), io.u(e.duration_ns);
      break;
    }
    case K::ScopeBegin:
    case K::ScopeEnd:
      io.small(e.name);
      break;
    case K::Step:
      io.u(e.step);
      break;
    case K::Category:
      io.u(e.storage), io.small(e.sub);
      break;
    case K::AllocRetry:
      io.u(e.size), io.u(e.requested), io.small(e.stream), io.small(e.sub), io.small(e.site);
      break;
  }
}

}  // namespace

void encode(std::string& out, const Event& e, DeltaState& st) {
  out.push_back(static_cast<char>(e.kind));
  put_varint(out, e.time_ns - st.time);
  st.time = e.time_ns;
  put_varint(out, e.thread);
  put_varint(out, e.device);
  Writer w{out, st};
  fields(w, const_cast<Event&>(e));  // the writer only reads: fields() takes references for both directions
}

void decode(Input& in, DeltaState& st, Event& e) {
  Clearer clear;
  for (std::size_t i = 0; i < e.n_inputs && i < e.inputs.size(); ++i) clear.shape(e.inputs[i]);  // before n_inputs is 0
  fields(clear, e);  // the previous event's fields, so `e` reads as a fresh Event
  e.kind = EventKind::Step;
  std::uint64_t kind = in.varint();
  if (!is_event_kind(kind)) throw TraceError("unknown event kind " + std::to_string(kind));
  e.kind = static_cast<EventKind>(kind);
  e.time_ns = st.time + in.varint();
  st.time = e.time_ns;
  std::uint64_t thread = in.varint();
  if (thread > 0xffffffffu) throw TraceError("thread number out of range");
  e.thread = static_cast<std::uint32_t>(thread);
  Reader r{in, st};
  r.small(e.device);
  fields(r, e);
}

}  // namespace memlens::profiler::codec
