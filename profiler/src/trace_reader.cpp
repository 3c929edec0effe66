#include "memlens/profiler/trace_reader.hpp"

#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "chunk_io.hpp"
#include "mapped_file.hpp"
#include "event_codec.hpp"
#include "symbolizer.hpp"

namespace memlens::profiler {

using namespace chunk_io;

namespace {

TraceHeader parse_header(const nlohmann::json& j) {
  TraceHeader h;
  h.program = j.at("program").get<std::string>();
  h.pid = j.at("pid").get<std::int64_t>();
  h.clock = j.at("clock").get<std::string>();
  h.start_unix_ns = j.at("start_unix_ns").get<std::int64_t>();
  for (auto& d : j.at("devices")) h.devices.push_back({d.at("name").get<std::string>(), d.at("capacity").get<std::uint64_t>()});
  h.allocator_config = j.at("allocator_config").get<std::string>();
  h.notes = j.at("notes").get<std::string>();
  return h;
}

std::string count_text(std::uint64_t events, std::size_t chunks) {
  return std::to_string(events) + " events from " + std::to_string(chunks) + " whole event chunk" +
         (chunks == 1 ? "" : "s");
}

}  // namespace

TraceReader::TraceReader(const std::string& path) : path_(path), data_(std::make_unique<MappedFile>(path)) {
  const std::size_t n = data_->size();
  if (n == 0) throw TraceError(path + ": empty file, not a memlens trace");
  if (n < sizeof kTraceMagic || std::memcmp(data_->data(), kTraceMagic, sizeof kTraceMagic) != 0)
    throw TraceError(path + ": not a memlens trace (bad magic)");
  if (n < 16) throw TraceError(path + ": truncated header");
  auto version = get<std::uint32_t>(data_->data() + 8);
  if (version > kFormatVersion)
    throw TraceError(path + ": trace format version " + std::to_string(version) +
                     " is newer than this memlens reads (" + std::to_string(kFormatVersion) + ")");
  if (version == 0) throw TraceError(path + ": invalid trace format version 0");
  if (version < kFormatVersion)
    throw TraceError(path + ": trace format version " + std::to_string(version) + " is older than this memlens reads (" +
                     std::to_string(kFormatVersion) + "); record it again");
  auto json_len = get<std::uint32_t>(data_->data() + 12);
  if (16 + static_cast<std::uint64_t>(json_len) + 4 > n) throw TraceError(path + ": truncated header");
  const char* json = data_->data() + 16;
  if (crc(json, json_len) != get<std::uint32_t>(json + json_len))
    throw TraceError(path + ": corrupt header (checksum mismatch)");
  try {
    header_ = parse_header(nlohmann::json::parse(json, json + json_len));
  } catch (const nlohmann::json::exception& e) {
    throw TraceError(path + ": corrupt header: " + e.what());
  }

  // Walk the chunks; anything after the last whole, valid chunk is reported, not read.
  std::uint64_t at = 16 + json_len + 4;
  while (true) {
    if (at == n) {
      problem_ = "the trace ends without a footer (the program stopped before closing it): recovered " +
                 count_text(totals_.events, event_chunks_.size());
      return;
    }
    std::uint32_t count = 0;
    std::uint64_t first = 0, next = 0;
    ChunkType type{};
    std::string payload;
    try {
      // An events chunk is checked (magic, sizes, checksum) but not decoded: the
      // passes over the trace decode it, once each.
      payload = read_payload(at, &count, &first, &type, &next, /*events_too=*/false);
    } catch (const TraceError& e) {
      bool truncated = std::string(e.what()).find("incomplete") != std::string::npos;
      problem_ = truncated ? "the trace ends without a footer (the program stopped before closing it): recovered " +
                                 count_text(totals_.events, event_chunks_.size()) + "; " + std::to_string(n - at) +
                                 " bytes at offset " + std::to_string(at) + " are an incomplete chunk"
                           : std::string(e.what()) + "; recovered " + count_text(totals_.events, event_chunks_.size()) + " before it";
      return;
    }
    try {
      codec::Input input(payload.data(), payload.data() + payload.size());
      if (type == ChunkType::Events) {
        event_chunks_.push_back({at, type, count, first});
        totals_.events += count;
      } else if (type == ChunkType::Strings) {
        std::uint64_t id = input.varint();
        if (id != strings_.size()) throw TraceError("string table out of order");
        for (std::uint32_t i = 0; i < count; ++i) strings_.push_back(input.bytes(input.varint()));
      } else if (type == ChunkType::Sites) {
        std::uint64_t id = input.varint();
        if (id != sites_.size()) throw TraceError("site table out of order");
        for (std::uint32_t i = 0; i < count; ++i) {
          Site s;
          s.file = static_cast<std::uint32_t>(input.varint());
          s.line = static_cast<std::uint32_t>(input.varint());
          s.function = static_cast<std::uint32_t>(input.varint());
          s.address = input.varint();
          sites_.push_back(s);
        }
      } else if (type == ChunkType::Stacks) {
        std::uint64_t id = input.varint();
        if (id != stacks_.size()) throw TraceError("stack table out of order");
        for (std::uint32_t i = 0; i < count; ++i) {
          std::uint64_t depth = input.varint();
          if (depth > 1024) throw TraceError("stack deeper than 1024 frames");
          std::vector<std::uint64_t> frames;
          std::uint64_t prev = 0;
          for (std::uint64_t k = 0; k < depth; ++k) frames.push_back(prev += static_cast<std::uint64_t>(codec::unzigzag(input.varint())));
          stacks_.push_back(std::move(frames));
        }
      } else if (type == ChunkType::Modules) {
        for (std::uint32_t i = 0; i < count; ++i) {
          ModuleInfo m;
          m.path = input.bytes(input.varint());
          m.build_id = input.bytes(input.varint());
          m.start = input.varint();
          m.end = input.varint();
          m.bias = input.varint();
          modules_.push_back(std::move(m));
        }
      } else if (type == ChunkType::Footer) {
        TraceTotals t;
        t.events = input.varint();
        for (auto& k : t.by_kind) k = input.varint();
        footer_ = t;
        if (t.events != totals_.events)
          problem_ = "the footer counts " + std::to_string(t.events) + " events but " + std::to_string(totals_.events) +
                     " were read";
        return;
      }
    } catch (const TraceError& e) {
      problem_ = "corrupt chunk at offset " + std::to_string(at) + " (" + e.what() + "); recovered " +
                 count_text(totals_.events, event_chunks_.size()) + " before it";
      return;
    }
    at = next;
  }
}

std::string TraceReader::read_payload(std::uint64_t at, std::uint32_t* count, std::uint64_t* first, ChunkType* type,
                                      std::uint64_t* next, bool events_too) const {
  const std::size_t n = data_->size();
  if (at + kChunkHeaderSize > n) throw TraceError("incomplete chunk header");
  const char* p = data_->data() + at;
  if (get<std::uint32_t>(p) != kChunkMagic)
    throw TraceError("corrupt chunk at offset " + std::to_string(at) + " (bad chunk magic)");
  auto t = get<std::uint8_t>(p + 4);
  auto codec_id = get<std::uint8_t>(p + 5);
  *count = get<std::uint32_t>(p + 8);
  *first = get<std::uint64_t>(p + 12);
  auto raw_size = get<std::uint32_t>(p + 20);
  auto stored_size = get<std::uint32_t>(p + 24);
  auto sum = get<std::uint32_t>(p + 28);
  if (at + kChunkHeaderSize + stored_size > n) throw TraceError("incomplete chunk payload");
  const char* payload = p + kChunkHeaderSize;
  if (crc(payload, stored_size, crc(p + 4, 24)) != sum)
    throw TraceError("corrupt chunk at offset " + std::to_string(at) + " (checksum mismatch)");
  if (t < 1 || (t > 5 && t != 15))
    throw TraceError("corrupt chunk at offset " + std::to_string(at) + " (unknown chunk type " + std::to_string(t) + ")");
  *type = static_cast<ChunkType>(t);
  *next = at + kChunkHeaderSize + stored_size;
  if (*type == ChunkType::Events && !events_too) return {};
  if (codec_id == kCodecNone) {
    if (raw_size != stored_size) throw TraceError("corrupt chunk at offset " + std::to_string(at) + " (size mismatch)");
    return std::string(payload, stored_size);
  }
  if (codec_id != kCodecZstd)
    throw TraceError("corrupt chunk at offset " + std::to_string(at) + " (unknown codec " + std::to_string(codec_id) + ")");
  std::string raw(raw_size, '\0');
  std::size_t got = ZSTD_decompress(raw.data(), raw.size(), payload, stored_size);
  if (ZSTD_isError(got) || got != raw_size)
    throw TraceError("corrupt chunk at offset " + std::to_string(at) + " (zstd: " +
                     (ZSTD_isError(got) ? ZSTD_getErrorName(got) : "size mismatch") + ")");
  return raw;
}

void TraceReader::decode_chunk(const ChunkInfo& c, const std::function<void(const Event&)>& visit) const {
  std::uint32_t count = 0;
  std::uint64_t first = 0, next = 0;
  ChunkType type{};
  std::string raw = read_payload(c.offset, &count, &first, &type, &next, true);
  codec::Input in(raw.data(), raw.data() + raw.size());
  codec::DeltaState st{first, 0};
  Event e;  // reused: decode() clears what the previous event set
  try {
    for (std::uint32_t i = 0; i < count; ++i) {
      codec::decode(in, st, e);
      visit(e);
    }
    if (!in.done()) throw TraceError("trailing bytes after " + std::to_string(count) + " events");
  } catch (const TraceError& err) {
    throw TraceError(path_ + ": corrupt events chunk at offset " + std::to_string(c.offset) + " (" + err.what() + ")");
  }
}

void TraceReader::for_each(const std::function<void(const Event&)>& visit) const {
  for (auto& c : event_chunks_) decode_chunk(c, visit);
}

const TraceTotals& TraceReader::totals() const {
  if (!by_kind_counted_) {
    std::fill(totals_.by_kind.begin(), totals_.by_kind.end(), 0);
    for_each([&](const Event& e) { ++totals_.by_kind[static_cast<std::size_t>(e.kind)]; });
    by_kind_counted_ = true;
  }
  return totals_;
}

std::vector<Event> TraceReader::read_chunk(std::size_t i) const {
  if (i >= event_chunks_.size())
    throw TraceError("chunk " + std::to_string(i) + " out of range (" + std::to_string(event_chunks_.size()) + " chunks)");
  std::vector<Event> out;
  out.reserve(event_chunks_[i].count);
  decode_chunk(event_chunks_[i], [&](const Event& e) { out.push_back(e); });
  return out;
}

const std::string& TraceReader::string(std::uint32_t id) const {
  static const std::string none;
  return id < strings_.size() ? strings_[id] : none;
}

TraceReader::~TraceReader() = default;
TraceReader::TraceReader(TraceReader&&) noexcept = default;

SiteInfo TraceReader::site(std::uint32_t id) const {
  if (id == 0 || id >= sites_.size()) return {};
  const Site& s = sites_[id];
  if (!s.address) return {string(s.file), s.line, string(s.function), 0};
  if (!symbolizer_) symbolizer_ = std::make_unique<Symbolizer>(modules_);
  return symbolizer_->resolve(s.address);
}

std::vector<SiteInfo> TraceReader::stack(std::uint32_t id) const {
  if (id == 0 || id >= stacks_.size()) return {};
  if (!symbolizer_) symbolizer_ = std::make_unique<Symbolizer>(modules_);
  std::vector<SiteInfo> out;
  for (auto f : stacks_[id]) out.push_back(symbolizer_->resolve(f));
  return out;
}

std::string TraceReader::site_location(std::uint32_t id) const {
  SiteInfo s = site(id);
  return s.file.empty() ? "" : s.file + ":" + std::to_string(s.line);
}

}  // namespace memlens::profiler
