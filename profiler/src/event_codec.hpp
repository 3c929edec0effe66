#pragma once
// Events <-> bytes: varints, zigzag deltas for timestamps and addresses, and one field
// list per kind that the encoder and decoder both walk (so they cannot drift apart).
#include <cstdint>
#include <string>

#include "memlens/profiler/event.hpp"
#include "memlens/profiler/trace_format.hpp"

namespace memlens::profiler::codec {

inline void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
inline std::uint64_t zigzag(std::int64_t v) { return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63); }
inline std::int64_t unzigzag(std::uint64_t v) { return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1); }

// Reads varints from a byte range; throws TraceError on running past its end.
class Input {
 public:
  Input(const char* p, const char* end) : p_(p), end_(end) {}
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) throw TraceError("truncated varint");
      auto b = static_cast<std::uint8_t>(*p_++);
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    throw TraceError("malformed varint");
  }
  std::string bytes(std::uint64_t n) {
    if (n > static_cast<std::uint64_t>(end_ - p_)) throw TraceError("truncated string");
    std::string s(p_, static_cast<std::size_t>(n));
    p_ += n;
    return s;
  }
  bool done() const { return p_ == end_; }

 private:
  const char* p_;
  const char* end_;
};

// State carried from event to event inside one chunk.
struct DeltaState {
  std::uint64_t time = 0;
  std::uint64_t address = 0;
};

// Appends `e` to `out`.
void encode(std::string& out, const Event& e, DeltaState& st);
// Reads one event into `e` (reused from event to event); throws TraceError on malformed input.
void decode(Input& in, DeltaState& st, Event& e);

}  // namespace memlens::profiler::codec
