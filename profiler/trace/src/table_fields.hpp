#pragma once
// The fields of each table's rows (memlens/trace/trace_format.hpp), in file order: the one
// list that TraceWriter encodes and TraceReader decodes, as event_fields.hpp is for events.
// An IO has u (an unsigned varint into any unsigned field), text (length, then bytes),
// enumeration (a value below a count) and frames (a stack: its depth, then each site id as
// a zigzag delta from the one before).
#include <string>
#include <vector>

#include "event_codec.hpp"
#include "memlens/trace/trace_format.hpp"

namespace memlens::profiler::table_fields {

inline constexpr std::size_t kMaxStackFrames = 1024;

template <class IO, class S>
void string_row(IO& io, S& s) {
  io.text(s);
}
template <class IO, class S>
void site_row(IO& io, S& s) {
  io.u(s.file), io.u(s.line), io.u(s.function), io.u(s.address), io.enumeration(s.language, kLanguageCount, "frame language");
}
template <class IO, class S>
void stack_row(IO& io, S& frames) {
  io.frames(frames);
}
template <class IO, class M>
void module_row(IO& io, M& m) {
  io.text(m.path), io.text(m.build_id), io.u(m.start), io.u(m.end), io.u(m.bias);
}

// Appends rows to a table chunk's payload.
struct TableEncoder {
  std::string& raw;
  template <class T>
  void u(const T& v) {
    codec::put_varint(raw, static_cast<std::uint64_t>(v));
  }
  void text(const std::string& s) {
    codec::put_varint(raw, s.size());
    raw += s;
  }
  template <class E>
  void enumeration(const E& e, std::uint8_t, const char*) {
    u(static_cast<std::uint8_t>(e));
  }
  void frames(const std::vector<std::uint32_t>& f) {
    codec::put_varint(raw, f.size());
    std::int64_t prev = 0;
    for (std::uint32_t id : f) {
      codec::put_varint(raw, codec::zigzag(std::int64_t{id} - prev));
      prev = id;
    }
  }
};

// Reads rows back; throws TraceError for one no writer makes.
struct TableDecoder {
  codec::Input& in;
  template <class T>
  void u(T& v) {
    v = static_cast<T>(in.varint());
  }
  void text(std::string& s) { s = in.bytes(in.varint()); }
  template <class E>
  void enumeration(E& e, std::uint8_t count, const char* what) {
    std::uint64_t v = in.varint();
    if (v >= count) throw TraceError(std::string("unknown ") + what + " " + std::to_string(v));
    e = static_cast<E>(v);
  }
  void frames(std::vector<std::uint32_t>& f) {
    std::uint64_t depth = in.varint();
    if (depth > kMaxStackFrames) throw TraceError("stack deeper than 1024 frames");
    std::int64_t prev = 0;
    for (std::uint64_t k = 0; k < depth; ++k) {
      // A frame past the site table reads as "none", like any id. Added as unsigned: a
      // crafted delta must wrap, not overflow (signed overflow is undefined).
      prev =
          static_cast<std::int64_t>(static_cast<std::uint64_t>(prev) + static_cast<std::uint64_t>(codec::unzigzag(in.varint())));
      f.push_back(prev > 0 && prev <= 0xffffffff ? static_cast<std::uint32_t>(prev) : 0);
    }
  }
};

}  // namespace memlens::profiler::table_fields
