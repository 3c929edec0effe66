#pragma once
// Events <-> bytes: varints, zigzag deltas for timestamps and addresses, and one field
// list per kind that the encoder and decoder both walk (so they cannot drift apart).
#include <array>
#include <cstdint>
#include <string>

#include "memlens/trace/event.hpp"
#include "memlens/trace/trace_format.hpp"

namespace memlens::profiler::codec {

// Writes `v` at `p` (at most 10 bytes there) and moves `p` past it. The event encoder
// writes through a pointer into room it made once per event: no size check per byte.
inline void put_varint(char*& p, std::uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
}
inline void put_varint(std::string& out, std::uint64_t v) {
  char bytes[10];
  char* p = bytes;
  put_varint(p, v);
  out.append(bytes, static_cast<std::size_t>(p - bytes));
}
inline std::uint64_t zigzag(std::int64_t v) { return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63); }
inline std::int64_t unzigzag(std::uint64_t v) { return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1); }

// Reads varints from a byte range; throws TraceError on running past its end.
class Input {
 public:
  Input(const char* p, const char* end) : p_(p), end_(end) {}
  // Far from the end (every chunk but its last few bytes) a varint is read without a
  // bounds check per byte; near the end, with one.
  std::uint64_t varint() {
    if (end_ - p_ >= kMaxVarintBytes) [[likely]] {
      auto* q = reinterpret_cast<const std::uint8_t*>(p_);
      std::uint64_t v = q[0];
      if (v < 0x80) {
        ++p_;
        return v;
      }
      v &= 0x7f;
      for (int i = 1; i < kMaxVarintBytes; ++i) {
        v |= static_cast<std::uint64_t>(q[i] & 0x7f) << (7 * i);
        if (q[i] < 0x80) {
          p_ += i + 1;
          return v;
        }
      }
      throw TraceError("malformed varint");
    }
    return checked_varint();
  }
  std::string bytes(std::uint64_t n) {
    if (n > static_cast<std::uint64_t>(end_ - p_)) throw TraceError("truncated string");
    std::string s(p_, static_cast<std::size_t>(n));
    p_ += n;
    return s;
  }
  bool done() const { return p_ == end_; }

 private:
  static constexpr int kMaxVarintBytes = 10;  // 64 bits, 7 per byte
  [[gnu::noinline]] std::uint64_t checked_varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) throw TraceError("truncated varint");
      auto b = static_cast<std::uint8_t>(*p_++);
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    throw TraceError("malformed varint");
  }

  const char* p_;
  const char* end_;
};

// State carried from event to event inside one chunk.
struct DeltaState {
  std::uint64_t time = 0;
  std::uint64_t address = 0;
  std::uint64_t storage = 0;
};

// An encoded event's most bytes: a field of n bytes in memory takes at most 2n as a
// varint (a byte's value needs 2, 8 bytes' 10), and kind, time, thread and device are
// members of Event too.
inline constexpr std::size_t kMaxEventBytes = 2 * sizeof(Event);

// One event per kind, each made once and then overwritten by the next event of its kind:
// decoding writes every field a kind has, so no event is cleared first (clearing an op's
// 392 bytes cost more than reading it). Dims past a shape's ndim are kept zero.
class EventSlots {
 public:
  EventSlots();
  Event& operator[](EventKind k) { return slots_[static_cast<std::size_t>(k) - 1]; }  // kinds count from 1

 private:
  std::array<Event, kEventKindCount> slots_;
};

// Appends `e` to `out`.
void encode(std::string& out, const Event& e, DeltaState& st);
// Reads one event into its kind's slot and returns it (valid until the next event of that
// kind); throws TraceError on malformed input.
const Event& decode(Input& in, DeltaState& st, EventSlots& slots);

}  // namespace memlens::profiler::codec
