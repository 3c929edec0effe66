#pragma once
// Bytes as people read them, the same in every report, summary and message.
#include <cstdint>
#include <string>

namespace memlens {

// "4.00 MiB" style (powers of 1024); "512 B" below a KiB; negative values keep their sign.
std::string format_bytes(std::int64_t bytes);
// The same for a count of bytes, every uint64 (a hostile trace's 2^64-1 byte block too).
std::string format_byte_count(std::uint64_t bytes);

}  // namespace memlens
