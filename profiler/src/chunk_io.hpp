#pragma once
// The byte layout shared by TraceWriter and TraceReader: fixed-width little-endian
// fields, the chunk header, and the checksum.
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace memlens::profiler::chunk_io {

// magic u32 | type u8 | codec u8 | reserved u16 | count u32 | first_time u64 |
// raw_size u32 | stored_size u32 | crc32 u32 (of the 24 bytes after the magic, then the payload)
inline constexpr std::size_t kChunkHeaderSize = 32;
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

}  // namespace memlens::profiler::chunk_io
