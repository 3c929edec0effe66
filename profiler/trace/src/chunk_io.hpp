#pragma once
// The byte layout shared by TraceWriter and TraceReader: fixed-width little-endian
// fields, the chunk header, and the checksum.
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "memlens/trace/trace_format.hpp"

namespace memlens::profiler::chunk_io {

inline constexpr std::uint8_t kCodecNone = 0, kCodecZstd = 1;

template <class T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

template <class T>
T get(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

inline std::uint32_t crc(const char* p, std::size_t n, std::uint32_t seed = 0) {
  return static_cast<std::uint32_t>(crc32(seed, reinterpret_cast<const Bytef*>(p), static_cast<uInt>(n)));
}

// The file ends inside a chunk: what a writer that was stopped leaves, not damage.
class TruncatedChunkError : public TraceError {
 public:
  using TraceError::TraceError;
};

// A chunk's header, as stored: 32 bytes. The checksum covers the 24 bytes after the magic,
// then the payload.
struct StoredHeader {
  std::uint32_t magic = 0;
  std::uint8_t type = 0;
  std::uint8_t codec = kCodecNone;
  std::uint16_t reserved = 0;
  std::uint32_t count = 0;  // entries: events, or a table's rows
  std::uint64_t first_time = 0;
  std::uint32_t raw_size = 0;     // the payload's bytes once decompressed
  std::uint32_t stored_size = 0;  // its bytes in the file
  std::uint32_t crc = 0;
};

// Its fields in file order: the one list that the writer packs and the reader unpacks.
template <class Field, class Header>
constexpr void fields(Header& h, Field field) {
  field(h.magic), field(h.type), field(h.codec), field(h.reserved), field(h.count), field(h.first_time);
  field(h.raw_size), field(h.stored_size), field(h.crc);
}

inline constexpr std::size_t kChunkHeaderSize = 32;
constexpr std::size_t packed_size() {
  const StoredHeader h{};
  std::size_t n = 0;
  fields(h, [&](auto v) { n += sizeof v; });
  return n;
}
static_assert(packed_size() == kChunkHeaderSize, "the field list is the 32-byte stored header");
inline constexpr std::size_t kChunkCrcOffset = 28;  // the crc, last: the checksum covers [4, 28)

inline std::string pack(const StoredHeader& h) {
  std::string out;
  fields(h, [&](auto v) { put(out, v); });
  return out;
}

// `p` holds kChunkHeaderSize bytes.
inline StoredHeader unpack(const char* p) {
  StoredHeader h;
  fields(h, [&](auto& v) {
    v = get<std::remove_reference_t<decltype(v)>>(p);
    p += sizeof v;
  });
  return h;
}

}  // namespace memlens::profiler::chunk_io
