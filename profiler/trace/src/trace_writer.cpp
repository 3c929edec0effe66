#include "memlens/trace/trace_writer.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "chunk_io.hpp"
#include "event_codec.hpp"
#include "table_fields.hpp"

namespace memlens::profiler {

using namespace chunk_io;

namespace {
nlohmann::json header_json(const TraceHeader& h) {
  nlohmann::json devices = nlohmann::json::array();
  for (auto& d : h.devices) devices.push_back({{"name", d.name}, {"capacity", d.capacity}});
  return {{"program", h.program}, {"pid", h.pid},
          {"clock", h.clock},     {"start_unix_ns", h.start_unix_ns},
          {"devices", devices},   {"allocator_config", h.allocator_config},
          {"notes", h.notes},     {"ends_mid_run", h.ends_mid_run}};
}

// A trace already at `path` is replaced, not cut: a reader following it (or mapping it)
// keeps the file it has, whose pages a truncation would take from under it, and sees a
// new file at the path.
std::FILE* create(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) ::unlink(path.c_str());
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw TraceError(path + ": cannot create trace file: " + std::strerror(errno));
  return f;
}

std::FILE* open_fd(int fd, const std::string& name) {
  int own = ::dup(fd);
  std::FILE* f = own < 0 ? nullptr : ::fdopen(own, "wb");
  if (!f) {
    int err = errno;
    if (own >= 0) ::close(own);
    throw TraceError(name + ": cannot write trace: " + std::strerror(err));
  }
  return f;
}
}  // namespace

TraceWriter::TraceWriter(const std::string& path, const TraceHeader& header, std::size_t events_per_chunk)
    : TraceWriter(create(path), path, header, events_per_chunk) {}

TraceWriter::TraceWriter(int fd, const std::string& name, const TraceHeader& header, std::size_t events_per_chunk)
    : TraceWriter(open_fd(fd, name), name, header, events_per_chunk) {}

TraceWriter::TraceWriter(std::FILE* file, const std::string& name, const TraceHeader& header, std::size_t events_per_chunk)
    : file_(file),
      path_(name),
      events_per_chunk_(std::clamp<std::size_t>(events_per_chunk, 1, kMaxChunkEvents)),
      compressor_(ZSTD_createCCtx()) {
  if (!compressor_) {
    std::fclose(file_);
    throw TraceError(path_ + ": zstd: cannot create a compression context");
  }
  std::string json = header_json(header).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out(kTraceMagic, sizeof kTraceMagic);
  chunk_io::put<std::uint32_t>(out, kFormatVersion);
  chunk_io::put<std::uint32_t>(out, static_cast<std::uint32_t>(json.size()));
  out += json;
  chunk_io::put<std::uint32_t>(out, crc(json.data(), json.size()));
  append_to_file(out.data(), out.size());
  std::fflush(file_);
}

TraceWriter::~TraceWriter() {
  try {
    close();
  } catch (const std::exception&) {
    // A destructor must not throw; the trace stays readable up to its last whole chunk.
  }
}

void TraceWriter::append_to_file(const void* data, std::size_t n) {
  if (std::fwrite(data, 1, n, file_) != n) throw TraceError(path_ + ": write failed: " + std::strerror(errno));
  offset_ += n;
}

std::uint32_t TraceWriter::intern_string(std::string_view s) {
  if (s.empty()) return 0;
  if (auto it = strings_.find(s); it != strings_.end()) return it->second;
  const std::uint32_t id = first_pending_string_ + static_cast<std::uint32_t>(pending_strings_.size());
  pending_strings_.emplace_back(s);
  strings_.emplace(s, id);
  return id;
}

std::uint32_t TraceWriter::intern_site(std::string_view file, std::uint32_t line, std::string_view function, Language language) {
  const Site site{intern_string(file), line, intern_string(function), 0, language};
  const std::array<std::uint32_t, 4> key{site.file, line, site.function, static_cast<std::uint32_t>(language)};
  const std::string_view bytes(reinterpret_cast<const char*>(key.data()), sizeof key);
  if (auto it = sites_.find(bytes); it != sites_.end()) return it->second;
  const std::uint32_t id = first_pending_site_ + static_cast<std::uint32_t>(pending_sites_.size());
  pending_sites_.push_back(site);
  sites_.emplace(bytes, id);
  return id;
}

std::uint32_t TraceWriter::intern_site_address(std::uint64_t address) {
  if (address == 0) return 0;
  if (auto it = address_sites_.find(address); it != address_sites_.end()) return it->second;
  const std::uint32_t id = first_pending_site_ + static_cast<std::uint32_t>(pending_sites_.size());
  pending_sites_.push_back(Site{0, 0, 0, address, Language::Native});
  address_sites_.emplace(address, id);
  return id;
}

std::uint32_t TraceWriter::intern_stack(const void* const* frames, int depth) {
  if (depth <= 0) return 0;
  const std::string_view key(reinterpret_cast<const char*>(frames), static_cast<std::size_t>(depth) * sizeof(void*));
  if (auto it = native_stacks_.find(key); it != native_stacks_.end()) return it->second;
  std::vector<std::uint32_t> sites(static_cast<std::size_t>(depth));
  for (int i = 0; i < depth; ++i)
    sites[static_cast<std::size_t>(i)] = intern_site_address(reinterpret_cast<std::uint64_t>(frames[i]));
  const std::uint32_t id = intern_stack(sites);
  native_stacks_.emplace(key, id);
  return id;
}

std::uint32_t TraceWriter::intern_stack(const std::vector<std::uint32_t>& sites) {
  if (sites.empty()) return 0;
  const std::string_view key(reinterpret_cast<const char*>(sites.data()), sites.size() * sizeof(std::uint32_t));
  if (auto it = stacks_.find(key); it != stacks_.end()) return it->second;
  const std::uint32_t id = first_pending_stack_ + static_cast<std::uint32_t>(pending_stacks_.size());
  pending_stacks_.push_back(sites);
  stacks_.emplace(key, id);
  return id;
}

void TraceWriter::add_modules(const std::vector<ModuleInfo>& modules) {
  pending_modules_.insert(pending_modules_.end(), modules.begin(), modules.end());
}

void TraceWriter::write(const Event& e) {
  if (!file_) throw TraceError(path_ + ": write after close");
  if (pending_count_ == 0) {
    pending_first_time_ = delta_time_ = e.time_ns;
    delta_address_ = delta_storage_ = 0;
  }
  codec::DeltaState st{delta_time_, delta_address_, delta_storage_};
  codec::encode(pending_raw_, e, st);
  delta_time_ = st.time;
  delta_address_ = st.address;
  delta_storage_ = st.storage;
  ++pending_count_;
  ++totals_.events;
  ++totals_.by_kind[static_cast<std::size_t>(e.kind)];
  if (pending_count_ >= events_per_chunk_) flush();
}

void TraceWriter::CompressorFree::operator()(ZSTD_CCtx_s* c) const { ZSTD_freeCCtx(c); }

void TraceWriter::write_chunk(ChunkType type, std::uint32_t count, std::uint64_t first_time, const std::string& raw,
                              bool compress) {
  std::string_view stored = raw;
  std::uint8_t codec = kCodecNone;
  if (compress) {
    const std::size_t bound = ZSTD_compressBound(raw.size());
    if (compressed_.size() < bound) compressed_.resize(bound);
    // Level 1: the writer thread shares the machine with the program it records; at
    // level 3 its compression alone made recording the linear-regression sample cost
    // 1.75x instead of 1.23x (traces stay under 3 bytes an event either way).
    std::size_t n = ZSTD_compressCCtx(compressor_.get(), compressed_.data(), bound, raw.data(), raw.size(), 1);
    if (ZSTD_isError(n)) throw TraceError(path_ + ": zstd: " + ZSTD_getErrorName(n));
    stored = std::string_view(compressed_.data(), n);
    codec = kCodecZstd;
  }
  chunk_io::StoredHeader h{.magic = kChunkMagic,
                           .type = static_cast<std::uint8_t>(type),
                           .codec = codec,
                           .count = count,
                           .first_time = first_time,
                           .raw_size = static_cast<std::uint32_t>(raw.size()),
                           .stored_size = static_cast<std::uint32_t>(stored.size())};
  std::string head = chunk_io::pack(h);
  h.crc = crc(stored.data(), stored.size(), crc(head.data() + 4, chunk_io::kChunkCrcOffset - 4));
  head = chunk_io::pack(h);
  append_to_file(head.data(), head.size());
  append_to_file(stored.data(), stored.size());
}

// An id table chunk: the first new id, then the new entries; they are then written.
template <class Entry, class Row>
void TraceWriter::write_table(ChunkType type, std::uint32_t& first_id, std::vector<Entry>& pending, Row row) {
  if (pending.empty()) return;
  std::string raw;
  codec::put_varint(raw, first_id);
  table_fields::TableEncoder io{raw};
  for (const auto& e : pending) row(io, e);
  auto count = static_cast<std::uint32_t>(pending.size());
  write_chunk(type, count, 0, raw, true);
  first_id += count;
  pending.clear();
}

void TraceWriter::flush() {
  if (!file_) return;
  // Tables first: every id an events chunk uses is defined before it.
  using namespace table_fields;
  write_table(ChunkType::Strings, first_pending_string_, pending_strings_, [](auto& io, auto& row) { string_row(io, row); });
  write_table(ChunkType::Sites, first_pending_site_, pending_sites_, [](auto& io, auto& row) { site_row(io, row); });
  write_table(ChunkType::Stacks, first_pending_stack_, pending_stacks_, [](auto& io, auto& row) { stack_row(io, row); });
  if (!pending_modules_.empty()) {
    std::string raw;
    TableEncoder io{raw};
    for (const ModuleInfo& m : pending_modules_) module_row(io, m);
    write_chunk(ChunkType::Modules, static_cast<std::uint32_t>(pending_modules_.size()), 0, raw, true);
    pending_modules_.clear();
  }
  if (pending_count_ > 0) {
    write_chunk(ChunkType::Events, pending_count_, pending_first_time_, pending_raw_, true);
    pending_raw_.clear();
    pending_count_ = 0;
  }
  if (std::fflush(file_) != 0) throw TraceError(path_ + ": flush failed: " + std::strerror(errno));
}

void TraceWriter::close() {
  if (!file_) return;
  flush();
  std::string raw;
  codec::put_varint(raw, totals_.events);
  for (auto n : totals_.by_kind) codec::put_varint(raw, n);
  std::uint64_t footer_offset = offset_;
  write_chunk(ChunkType::Footer, 0, 0, raw, false);
  std::string trailer;
  chunk_io::put<std::uint64_t>(trailer, footer_offset);
  trailer.append(kTrailerMagic, sizeof kTrailerMagic);
  append_to_file(trailer.data(), trailer.size());
  std::FILE* f = file_;
  file_ = nullptr;
  if (std::fclose(f) != 0) throw TraceError(path_ + ": close failed: " + std::strerror(errno));
}

}  // namespace memlens::profiler
