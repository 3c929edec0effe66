#include "memlens/profiler/trace_reader.hpp"

#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "chunk_io.hpp"
#include "memlens/common/mapped_file.hpp"
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
  h.ends_mid_run = j.value("ends_mid_run", false);
  return h;
}

std::unique_ptr<MappedFile> map(const std::string& path) {
  try {
    return std::make_unique<MappedFile>(path);
  } catch (const FileError& e) {
    throw TraceError(e.what());
  }
}

// Drops a pass's pages behind it, a stride at a time: one madvise per chunk flushed the
// TLB per chunk, which cost a fifth of a pass on a VM.
class PagesBehind {
 public:
  PagesBehind(const MappedFile& file, std::uint64_t from) : file_(file), from_(from), to_(from) {}
  ~PagesBehind() { file_.release(from_, to_); }
  PagesBehind(const PagesBehind&) = delete;
  PagesBehind& operator=(const PagesBehind&) = delete;
  void passed(std::uint64_t to) {
    to_ = to;
    if (to_ - from_ < kStride) return;
    file_.release(from_, to_);
    from_ = to_;
  }

 private:
  static constexpr std::uint64_t kStride = 8u << 20;
  const MappedFile& file_;
  std::uint64_t from_, to_;
};

std::string count_text(std::uint64_t events, std::size_t chunks) {
  return std::to_string(events) + " events from " + std::to_string(chunks) + " whole event chunk" +
         (chunks == 1 ? "" : "s");
}

}  // namespace

TraceReader::TraceReader(const std::string& file, const std::string& shown_as)
    : path_(shown_as.empty() ? file : shown_as), data_(map(file)) {
  const std::string& path = path_;
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

  scan_chunks(16 + json_len + 4);
  readable_chunks_ = event_chunks_.size();
}

// Walks the chunks, verifying each checksum; anything after the last whole, valid chunk is
// reported, not read.
void TraceReader::scan_chunks(std::uint64_t at) {
  const std::size_t n = data_->size();
  PagesBehind pages(*data_, at);
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
      read_payload(at, &count, &first, &type, &next, /*events_too=*/false, /*verify=*/true, payload);
      pages.passed(next);  // checked: its pages need not count in RSS until a pass reads it
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
          std::uint64_t language = input.varint();
          if (language >= kLanguageCount) throw TraceError("unknown frame language " + std::to_string(language));
          s.language = static_cast<Language>(language);
          sites_.push_back(s);
        }
      } else if (type == ChunkType::Stacks) {
        std::uint64_t id = input.varint();
        if (id != stacks_.size()) throw TraceError("stack table out of order");
        for (std::uint32_t i = 0; i < count; ++i) {
          std::uint64_t depth = input.varint();
          if (depth > 1024) throw TraceError("stack deeper than 1024 frames");
          std::vector<std::uint32_t> frames;
          std::int64_t prev = 0;
          for (std::uint64_t k = 0; k < depth; ++k) {
            // A frame past the site table reads as "none", like any id.
            prev += codec::unzigzag(input.varint());
            frames.push_back(prev > 0 && prev <= 0xffffffff ? static_cast<std::uint32_t>(prev) : 0);
          }
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
        else
          problem_ = trailer_problem(at, next);
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

std::string TraceReader::trailer_problem(std::uint64_t footer_offset, std::uint64_t after_footer) const {
  const std::size_t n = data_->size();
  const std::uint64_t want = after_footer + kTrailerSize;
  if (n < want)
    return "the trace's trailer is cut (" + std::to_string(n - after_footer) + " of " + std::to_string(kTrailerSize) +
           " bytes after the footer); every chunk was read";
  const char* t = data_->data() + after_footer;
  if (get<std::uint64_t>(t) != footer_offset || std::memcmp(t + 8, kTrailerMagic, sizeof kTrailerMagic) != 0)
    return "the trace's trailer is damaged (offset " + std::to_string(after_footer) + "); every chunk was read";
  if (n > want) return std::to_string(n - want) + " bytes follow the trailer and were ignored";
  return {};
}

namespace {

// Decompresses a zstd payload into at most `raw_size` bytes, growing the buffer only as
// real output arrives: a tiny file declaring a huge size costs what it really expands to.
// `out` is the caller's buffer, reused from chunk to chunk.
void decompress_bounded(const char* payload, std::size_t stored, std::size_t raw_size, std::uint64_t at, std::string& out) {
  auto fail = [&](const std::string& why) {
    return TraceError("corrupt chunk at offset " + std::to_string(at) + " (zstd: " + why + ")");
  };
  // One context per thread, reset per chunk: creating one costs more than a small chunk.
  thread_local std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> ctx(ZSTD_createDCtx(), &ZSTD_freeDCtx);
  if (!ctx) throw fail("cannot create a decompression context");
  ZSTD_DCtx_reset(ctx.get(), ZSTD_reset_session_only);
  out.resize(std::min<std::size_t>(raw_size, stored * 8 + 4096));
  ZSTD_inBuffer in{payload, stored, 0};
  ZSTD_outBuffer o{out.data(), out.size(), 0};
  while (true) {
    std::size_t rc = ZSTD_decompressStream(ctx.get(), &o, &in);
    if (ZSTD_isError(rc)) throw fail(ZSTD_getErrorName(rc));
    if (rc == 0) break;  // the frame is complete
    if (o.pos < o.size) {
      if (in.pos == in.size) throw fail("payload ends inside its frame");
      continue;
    }
    if (out.size() == raw_size) throw fail("more data than the declared " + std::to_string(raw_size) + " bytes");
    out.resize(std::min<std::size_t>(raw_size, out.size() * 2));
    o.dst = out.data();
    o.size = out.size();
  }
  if (in.pos != in.size) throw fail("bytes after the frame");
  if (o.pos != raw_size)
    throw fail(std::to_string(o.pos) + " bytes where the chunk declares " + std::to_string(raw_size));
  out.resize(o.pos);
}

}  // namespace

void TraceReader::read_payload(std::uint64_t at, std::uint32_t* count, std::uint64_t* first, ChunkType* type,
                               std::uint64_t* next, bool events_too, bool verify, std::string& out) const {
  const std::size_t n = data_->size();
  if (at + kChunkHeaderSize > n) throw TraceError("incomplete chunk header");
  const char* p = data_->data() + at;
  auto corrupt = [&](const std::string& why) {
    return TraceError("corrupt chunk at offset " + std::to_string(at) + " (" + why + ")");
  };
  if (get<std::uint32_t>(p) != kChunkMagic) throw corrupt("bad chunk magic");
  auto t = get<std::uint8_t>(p + 4);
  auto codec_id = get<std::uint8_t>(p + 5);
  *count = get<std::uint32_t>(p + 8);
  *first = get<std::uint64_t>(p + 12);
  auto raw_size = get<std::uint32_t>(p + 20);
  auto stored_size = get<std::uint32_t>(p + 24);
  auto sum = get<std::uint32_t>(p + 28);
  if (at + kChunkHeaderSize + stored_size > n) throw TraceError("incomplete chunk payload");
  const char* payload = p + kChunkHeaderSize;
  if (verify && crc(payload, stored_size, crc(p + 4, 24)) != sum) throw corrupt("checksum mismatch");
  if (!is_chunk_type(t)) throw corrupt("unknown chunk type " + std::to_string(t));
  *type = static_cast<ChunkType>(t);
  // Every entry takes at least a byte, every event kMinEventBytes: a count the payload
  // cannot hold is a lie, refused before anything is sized by it.
  const std::uint64_t min_entry = *type == ChunkType::Events ? kMinEventBytes : 1;
  if (static_cast<std::uint64_t>(*count) * min_entry > raw_size)
    throw corrupt("declares " + std::to_string(*count) + " entries in " + std::to_string(raw_size) + " bytes");
  if (*type == ChunkType::Events && *count > kMaxChunkEvents)
    throw corrupt("declares " + std::to_string(*count) + " events, more than a chunk may hold (" +
                  std::to_string(kMaxChunkEvents) + ")");
  if (raw_size > kMaxChunkRawBytes)
    throw corrupt("declares " + std::to_string(raw_size) + " bytes, more than a chunk may hold (" +
                  std::to_string(kMaxChunkRawBytes) + ")");
  *next = at + kChunkHeaderSize + stored_size;
  if (*type == ChunkType::Events && !events_too) {
    out.clear();
    return;
  }
  if (codec_id == kCodecNone) {
    if (raw_size != stored_size) throw corrupt("size mismatch");
    out.assign(payload, stored_size);
    return;
  }
  if (codec_id != kCodecZstd) throw corrupt("unknown codec " + std::to_string(codec_id));
  decompress_bounded(payload, stored_size, raw_size, at, out);
}

std::uint64_t TraceReader::decode_chunk(const ChunkInfo& c, std::string& raw,
                                       const std::function<void(const Event&)>& visit) const {
  std::uint32_t count = 0;
  std::uint64_t first = 0, next = 0;
  ChunkType type{};
  // The checksum was verified when the trace was opened; read_payload's errors name the chunk.
  read_payload(c.offset, &count, &first, &type, &next, /*events_too=*/true, /*verify=*/false, raw);
  codec::Input in(raw.data(), raw.data() + raw.size());
  codec::DeltaState st{first, 0};
  codec::EventSlots slots;
  try {
    for (std::uint32_t i = 0; i < count; ++i) visit(codec::decode(in, st, slots));
    if (!in.done()) throw TraceError("trailing bytes after " + std::to_string(count) + " events");
  } catch (const TraceError& err) {
    throw TraceError("corrupt events chunk at offset " + std::to_string(c.offset) + " (" + err.what() + ")");
  }
  return next;
}

void TraceReader::for_each(const std::function<void(const Event&)>& visit, std::uint64_t until_ns) const {
  for_each_from(0, nullptr, visit, until_ns);
}

void TraceReader::for_each_from(std::size_t first, const std::function<void(std::size_t)>& at_chunk,
                                const std::function<void(const Event&)>& visit, std::uint64_t until_ns) const {
  const std::size_t readable = readable_chunks_.load();
  if (first >= readable) return;
  std::uint64_t events = 0;
  for (std::size_t i = 0; i < first; ++i) events += event_chunks_[i].count;
  PagesBehind pages(*data_, event_chunks_[first].offset);  // a pass holds a stride of pages at a time
  std::string raw;  // one chunk's decompressed events, reused
  for (std::size_t i = first; i < readable; ++i) {
    if (event_chunks_[i].first_time_ns > until_ns) return;  // events are in time order
    if (at_chunk) at_chunk(i);
    try {
      pages.passed(decode_chunk(event_chunks_[i], raw, visit));
    } catch (const TraceError& e) {
      // The chunks before it stand; this one and the rest are left out of every pass.
      std::lock_guard lock(problem_mutex_);
      readable_chunks_ = std::min(readable_chunks_.load(), i);
      problem_ = std::string(e.what()) + "; read " + count_text(events, i) + " before it";
      return;
    }
    events += event_chunks_[i].count;
  }
}

std::string TraceReader::problem() const {
  std::lock_guard lock(problem_mutex_);
  return problem_;
}

std::vector<ChunkInfo> TraceReader::chunks() const {
  return {event_chunks_.begin(), event_chunks_.begin() + static_cast<std::ptrdiff_t>(readable_chunks_.load())};
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
  const std::size_t readable = readable_chunks_.load();
  if (i >= readable) throw TraceError("chunk " + std::to_string(i) + " out of range (" + std::to_string(readable) + " chunks)");
  std::vector<Event> out;
  std::string raw;
  std::uint64_t next = decode_chunk(event_chunks_[i], raw, [&](const Event& e) { out.push_back(e); });
  data_->release(event_chunks_[i].offset, next);
  return out;
}

const std::string& TraceReader::string(std::uint32_t id) const {
  static const std::string none;
  return id < strings_.size() ? strings_[id] : none;
}

TraceReader::~TraceReader() = default;

SiteInfo TraceReader::site(std::uint32_t id) const {
  if (id == 0 || id >= sites_.size()) return {};
  const Site& s = sites_[id];
  if (!s.address) return {string(s.file), s.line, string(s.function), 0, s.language};
  if (!symbolizer_) symbolizer_ = std::make_unique<Symbolizer>(modules_);
  SiteInfo info = symbolizer_->resolve(s.address);
  info.language = s.language;
  return info;
}

std::vector<SiteInfo> TraceReader::stack(std::uint32_t id) const {
  std::vector<SiteInfo> out;
  for (std::uint32_t f : stack_sites(id)) out.push_back(site(f));
  return out;
}

const std::vector<std::uint32_t>& TraceReader::stack_sites(std::uint32_t id) const {
  return id < stacks_.size() ? stacks_[id] : stacks_[0];
}

std::string TraceReader::site_location(std::uint32_t id) const {
  SiteInfo s = site(id);
  return s.file.empty() ? "" : s.file + ":" + std::to_string(s.line);
}

}  // namespace memlens::profiler
