#pragma once
// Bytes of hostile traces, built here from the format's documented layout
// (docs/trace-format.md) with zlib's CRC and zstd, independently of TraceWriter: chunks
// whose checksum is valid but whose content lies.
#include <sys/resource.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace memlens::test {

template <class T>
void put_le(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

template <class T>
T get_le(const std::string& bytes, std::size_t at) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof(T));
  return v;
}

inline std::string zstd_of(const std::string& raw) {
  std::string out(ZSTD_compressBound(raw.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), raw.data(), raw.size(), 3));
  return out;
}

// One chunk: magic "CHNK" | type | codec | 0u16 | count | first_time | raw_size | stored_size | crc32
// of the 24 bytes after the magic and the payload.
inline std::string chunk_bytes(std::uint8_t type, std::uint8_t codec, std::uint32_t count, std::uint64_t first_time,
                               std::uint32_t raw_size, const std::string& stored) {
  std::string c;
  put_le<std::uint32_t>(c, 0x4b4e4843);
  put_le<std::uint8_t>(c, type);
  put_le<std::uint8_t>(c, codec);
  put_le<std::uint16_t>(c, 0);
  put_le<std::uint32_t>(c, count);
  put_le<std::uint64_t>(c, first_time);
  put_le<std::uint32_t>(c, raw_size);
  put_le<std::uint32_t>(c, static_cast<std::uint32_t>(stored.size()));
  uLong sum = crc32(0, reinterpret_cast<const Bytef*>(c.data() + 4), 24);
  sum = crc32(sum, reinterpret_cast<const Bytef*>(stored.data()), static_cast<uInt>(stored.size()));
  put_le<std::uint32_t>(c, static_cast<std::uint32_t>(sum));
  return c + stored;
}

// A whole trace's bytes up to (not including) its footer chunk, found through the trailer.
inline std::string before_footer(const std::string& whole) {
  return whole.substr(0, get_le<std::uint64_t>(whole, whole.size() - 16));
}

// `bytes` with the chunk at `offset` given a new zstd payload and a valid checksum; its
// count and first time are kept, so the footer still agrees with it.
inline std::string with_payload(const std::string& bytes, std::size_t offset, const std::string& raw) {
  std::uint32_t stored = get_le<std::uint32_t>(bytes, offset + 24);
  std::string c = chunk_bytes(static_cast<std::uint8_t>(bytes[offset + 4]), 1, get_le<std::uint32_t>(bytes, offset + 8),
                              get_le<std::uint64_t>(bytes, offset + 12), static_cast<std::uint32_t>(raw.size()), zstd_of(raw));
  std::string out = bytes.substr(0, offset) + c + bytes.substr(offset + 32 + stored);
  // The footer moved by the size difference: rewrite the trailer's offset.
  std::uint64_t footer = get_le<std::uint64_t>(out, out.size() - 16) + c.size() - (32 + stored);
  std::memcpy(out.data() + out.size() - 16, &footer, 8);
  return out;
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// This process's peak resident memory so far, in bytes.
inline std::uint64_t peak_rss() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<std::uint64_t>(u.ru_maxrss) * 1024;
}

}  // namespace memlens::test
