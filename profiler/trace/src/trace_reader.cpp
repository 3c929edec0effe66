#include "memlens/trace/trace_reader.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <type_traits>

#include "chunk_io.hpp"
#include "memlens/common/input_file.hpp"
#include "memlens/common/mapped_file.hpp"
#include "event_codec.hpp"
#include "table_fields.hpp"
#include "symbolizer.hpp"

namespace memlens::profiler {

using namespace chunk_io;

namespace {

// A whole number of the header: a float there (1.8e24) would be cast out of range.
template <class T>
T whole(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = j.at(key);
  if (!v.is_number_integer() || (std::is_unsigned_v<T> && !v.is_number_unsigned()))
    throw std::invalid_argument(std::string(key) + " is not a whole number" + (std::is_unsigned_v<T> ? " from 0" : ""));
  return v.get<T>();
}

TraceHeader parse_header(const nlohmann::json& j) {
  TraceHeader h;
  h.program = j.at("program").get<std::string>();
  h.pid = whole<std::int64_t>(j, "pid");
  h.clock = j.at("clock").get<std::string>();
  h.start_unix_ns = whole<std::int64_t>(j, "start_unix_ns");
  for (auto& d : j.at("devices")) h.devices.push_back({d.at("name").get<std::string>(), whole<std::uint64_t>(d, "capacity")});
  h.allocator_config = j.at("allocator_config").get<std::string>();
  h.notes = j.at("notes").get<std::string>();
  h.ends_mid_run = j.value("ends_mid_run", false);
  return h;
}

// An open descriptor, closed when this goes.
class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

MappedFile map(const std::string& path) {
  try {
    return MappedFile(path);
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
  return std::to_string(events) + " events from " + std::to_string(chunks) + " whole event chunk" + (chunks == 1 ? "" : "s");
}

// An id table's chunk: the first new id, which must follow the table's last, then its rows.
template <class Table, class Row>
void read_rows(codec::Input& input, std::uint32_t count, Table& table, const char* what, Row row) {
  if (input.varint() != table.size()) throw TraceError(std::string(what) + " table out of order");
  table_fields::TableDecoder io{input};
  for (std::uint32_t i = 0; i < count; ++i) {
    typename Table::value_type value{};
    row(io, value);
    table.push_back(std::move(value));
  }
}

}  // namespace

TraceReader::TraceReader(const std::string& path) : TraceReader(map(path), path) { from_path_ = true; }

TraceReader::TraceReader(MappedFile file, const std::string& name)
    : path_(name), data_(std::make_unique<MappedFile>(std::move(file))) {
  const std::string& path = path_;
  const std::size_t n = data_->size();
  if (n == 0) throw TraceHeaderIncompleteError(path + ": empty file, not a memlens trace");
  if (std::memcmp(data_->data(), kTraceMagic, std::min(n, sizeof kTraceMagic)) != 0)
    throw TraceError(path + ": not a memlens trace (bad magic)");
  if (n < 16) throw TraceHeaderIncompleteError(path + ": truncated header");
  auto version = get<std::uint32_t>(data_->data() + 8);
  if (version > kFormatVersion)
    throw TraceError(path + ": trace format version " + std::to_string(version) + " is newer than this memlens reads (" +
                     std::to_string(kFormatVersion) + ")");
  if (version == 0) throw TraceError(path + ": invalid trace format version 0");
  if (version < kFormatVersion)
    throw TraceError(path + ": trace format version " + std::to_string(version) + " is older than this memlens reads (" +
                     std::to_string(kFormatVersion) + "); record it again");
  auto json_len = get<std::uint32_t>(data_->data() + 12);
  if (16 + static_cast<std::uint64_t>(json_len) + 4 > n) throw TraceHeaderIncompleteError(path + ": truncated header");
  const char* json = data_->data() + 16;
  if (crc(json, json_len) != get<std::uint32_t>(json + json_len)) throw TraceError(path + ": corrupt header (checksum mismatch)");
  try {
    header_ = parse_header(nlohmann::json::parse(json, json + json_len));
  } catch (const nlohmann::json::exception& e) {
    throw TraceError(path + ": corrupt header: " + e.what());
  } catch (const std::invalid_argument& e) {
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
  // Where it stops, and whether more may follow there (the end of the file, not a footer
  // or a corrupt chunk).
  auto stop = [&](bool resumable) {
    scan_end_ = at;
    scan_resumable_ = resumable;
  };
  while (true) {
    if (at == n) {
      stop(true);
      problem_ = "the trace ends without a footer (the program stopped before closing it): recovered " +
                 count_text(totals_.events, event_chunks_.size());
      return;
    }
    ChunkHeader chunk;
    std::string payload;
    try {
      // An events chunk is checked (magic, sizes, checksum) but not decoded: the
      // passes over the trace decode it, once each.
      chunk = read_payload(at, /*events_too=*/false, /*verify=*/true, payload);
      pages.passed(chunk.next);  // checked: its pages need not count in RSS until a pass reads it
    } catch (const TruncatedChunkError&) {
      stop(true);
      problem_ = "the trace ends without a footer (the program stopped before closing it): recovered " +
                 count_text(totals_.events, event_chunks_.size()) + "; " + std::to_string(n - at) + " bytes at offset " +
                 std::to_string(at) + " are an incomplete chunk";
      return;
    } catch (const TraceError& e) {
      stop(false);
      problem_ = std::string(e.what()) + "; recovered " + count_text(totals_.events, event_chunks_.size()) + " before it";
      return;
    }
    const ChunkType type = chunk.type;
    const std::uint32_t count = chunk.count;
    const std::uint64_t next = chunk.next;
    try {
      codec::Input input(payload.data(), payload.data() + payload.size());
      if (type == ChunkType::Events) {
        event_chunks_.push_back({at, type, count, chunk.first_time_ns});
        totals_.events += count;
      } else if (type == ChunkType::Strings) {
        read_rows(input, count, strings_, "string", [](auto& io, auto& row) { table_fields::string_row(io, row); });
      } else if (type == ChunkType::Sites) {
        read_rows(input, count, sites_, "site", [](auto& io, auto& row) { table_fields::site_row(io, row); });
      } else if (type == ChunkType::Stacks) {
        read_rows(input, count, stacks_, "stack", [](auto& io, auto& row) { table_fields::stack_row(io, row); });
      } else if (type == ChunkType::Modules) {
        table_fields::TableDecoder io{input};
        for (std::uint32_t i = 0; i < count; ++i) {
          ModuleInfo m;
          table_fields::module_row(io, m);
          modules_.push_back(std::move(m));
        }
      } else if (type == ChunkType::Footer) {
        TraceTotals t;
        t.events = input.varint();
        for (auto& k : t.by_kind) k = input.varint();
        if (!input.done()) throw TraceError("trailing bytes after the footer's totals");
        footer_ = t;
        stop(false);
        if (t.events != totals_.events)
          problem_ =
              "the footer counts " + std::to_string(t.events) + " events but " + std::to_string(totals_.events) + " were read";
        else problem_ = trailer_problem(at, next);
        return;
      }
    } catch (const TraceError& e) {
      stop(false);
      problem_ = "corrupt chunk at offset " + std::to_string(at) + " (" + e.what() + "); recovered " +
                 count_text(totals_.events, event_chunks_.size()) + " before it";
      return;
    }
    at = next;
  }
}

TraceReader::Refresh TraceReader::refresh() {
  if (!from_path_) return Refresh::Unchanged;
  Descriptor fd(open_regular_file(path_));
  struct stat st {};
  if (fd.get() < 0 || fstat(fd.get(), &st) != 0) return Refresh::Unchanged;  // gone for now: what was read stands
  const auto size = static_cast<std::uint64_t>(st.st_size);
  const std::pair<std::uint64_t, std::uint64_t> identity{static_cast<std::uint64_t>(st.st_dev),
                                                         static_cast<std::uint64_t>(st.st_ino)};
  if (identity != data_->identity() || size < data_->size()) return Refresh::Replaced;
  if (!scan_resumable_ || size == data_->size()) return Refresh::Unchanged;
  MappedFile grown;
  try {
    grown = MappedFile(fd.get(), path_);
  } catch (const FileError&) {
    return Refresh::Unchanged;
  }
  const std::size_t chunks_before = event_chunks_.size(), modules_before = modules_.size();
  *data_ = std::move(grown);
  std::lock_guard lock(problem_mutex_);
  scan_chunks(scan_end_);
  if (!decode_failed_) readable_chunks_ = event_chunks_.size();
  by_kind_counted_ = false;
  if (modules_.size() != modules_before) symbolizer_.reset();  // it knows the modules it was made with
  return event_chunks_.size() != chunks_before || footer_ ? Refresh::Grew : Refresh::Unchanged;
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
  if (o.pos != raw_size) throw fail(std::to_string(o.pos) + " bytes where the chunk declares " + std::to_string(raw_size));
  out.resize(o.pos);
}

}  // namespace

TraceReader::ChunkHeader TraceReader::read_payload(std::uint64_t at, bool events_too, bool verify, std::string& out) const {
  const std::size_t n = data_->size();
  if (at + kChunkHeaderSize > n) throw TruncatedChunkError("incomplete chunk header");
  const char* p = data_->data() + at;
  auto corrupt = [&](const std::string& why) {
    return TraceError("corrupt chunk at offset " + std::to_string(at) + " (" + why + ")");
  };
  const chunk_io::StoredHeader h = chunk_io::unpack(p);
  if (h.magic != kChunkMagic) throw corrupt("bad chunk magic");
  if (at + kChunkHeaderSize + h.stored_size > n) throw TruncatedChunkError("incomplete chunk payload");
  const char* payload = p + kChunkHeaderSize;
  if (verify && crc(payload, h.stored_size, crc(p + 4, kChunkCrcOffset - 4)) != h.crc) throw corrupt("checksum mismatch");
  if (!is_chunk_type(h.type)) throw corrupt("unknown chunk type " + std::to_string(h.type));
  ChunkHeader out_header{static_cast<ChunkType>(h.type), h.count, h.first_time, at + kChunkHeaderSize + h.stored_size};
  // Every entry takes at least a byte, every event kMinEventBytes: a count the payload
  // cannot hold is a lie, refused before anything is sized by it.
  const std::uint64_t min_entry = out_header.type == ChunkType::Events ? kMinEventBytes : 1;
  if (static_cast<std::uint64_t>(h.count) * min_entry > h.raw_size)
    throw corrupt("declares " + std::to_string(h.count) + " entries in " + std::to_string(h.raw_size) + " bytes");
  if (out_header.type == ChunkType::Events && h.count > kMaxChunkEvents)
    throw corrupt("declares " + std::to_string(h.count) + " events, more than a chunk may hold (" +
                  std::to_string(kMaxChunkEvents) + ")");
  if (h.raw_size > kMaxChunkRawBytes)
    throw corrupt("declares " + std::to_string(h.raw_size) + " bytes, more than a chunk may hold (" +
                  std::to_string(kMaxChunkRawBytes) + ")");
  if (out_header.type == ChunkType::Events && !events_too) {
    out.clear();
    return out_header;
  }
  if (h.codec == kCodecNone) {
    if (h.raw_size != h.stored_size) throw corrupt("size mismatch");
    out.assign(payload, h.stored_size);
    return out_header;
  }
  if (h.codec != kCodecZstd) throw corrupt("unknown codec " + std::to_string(h.codec));
  decompress_bounded(payload, h.stored_size, h.raw_size, at, out);
  return out_header;
}

std::uint64_t TraceReader::decode_chunk(const ChunkInfo& c, std::string& raw,
                                        const std::function<void(const Event&)>& visit) const {
  // The checksum was verified when the trace was opened; read_payload's errors name the chunk.
  const ChunkHeader chunk = read_payload(c.offset, /*events_too=*/true, /*verify=*/false, raw);
  codec::Input in(raw.data(), raw.data() + raw.size());
  codec::DeltaState st{chunk.first_time_ns, 0, 0};
  codec::EventSlots slots;
  try {
    for (std::uint32_t i = 0; i < chunk.count; ++i) visit(codec::decode(in, st, slots));
    if (!in.done()) throw TraceError("trailing bytes after " + std::to_string(chunk.count) + " events");
  } catch (const TraceError& err) {
    throw TraceError("corrupt events chunk at offset " + std::to_string(c.offset) + " (" + err.what() + ")");
  }
  return chunk.next;
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
  std::string raw;                                         // one chunk's decompressed events, reused
  for (std::size_t i = first; i < readable; ++i) {
    if (event_chunks_[i].first_time_ns > until_ns) return;  // events are in time order
    if (at_chunk) at_chunk(i);
    try {
      pages.passed(decode_chunk(event_chunks_[i], raw, visit));
    } catch (const TraceError& e) {
      // The chunks before it stand; this one and the rest are left out of every pass.
      std::lock_guard lock(problem_mutex_);
      readable_chunks_ = std::min(readable_chunks_.load(), i);
      decode_failed_ = true;
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

std::vector<std::string> TraceReader::modules_without_lines() const {
  if (!symbolizer_) return {};
  const auto& modules = symbolizer_->modules_without_lines();
  return {modules.begin(), modules.end()};
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
