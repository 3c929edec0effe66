#pragma once
// Writes a .memtrace file. One thread owns a writer (the recorder's background thread);
// events are buffered into chunks, each chunk compressed with zstd, checksummed and
// appended with the string and site tables it needs written before it. A process that
// dies leaves every flushed chunk readable.
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "memlens/trace/event.hpp"
#include "memlens/trace/trace_format.hpp"

struct ZSTD_CCtx_s;

namespace memlens::profiler {

class TraceWriter {
 public:
  // Creates (truncates) `path` and writes the header; throws TraceError naming the path.
  TraceWriter(const std::string& path, const TraceHeader& header, std::size_t events_per_chunk = 4096);
  // Writes into the open file `fd` (not closed here; e.g. a memfd that a reader maps once
  // this writer is closed), `name` in messages.
  TraceWriter(int fd, const std::string& name, const TraceHeader& header, std::size_t events_per_chunk = 4096);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Interned ids are stable for the file; 0 is reserved for "none".
  std::uint32_t intern_string(std::string_view s);
  std::uint32_t intern_site(std::string_view file, std::uint32_t line, std::string_view function,
                            Language language = Language::Unknown);
  std::uint32_t intern_site_address(std::uint64_t address);
  // A native stack, innermost frame first (return addresses); 0 for an empty one.
  std::uint32_t intern_stack(const void* const* frames, int depth);
  // A stack of interned sites (symbolic frames from elsewhere), innermost first.
  std::uint32_t intern_stack(const std::vector<std::uint32_t>& sites);
  // Modules go into the trace with the next flush.
  void add_modules(const std::vector<ModuleInfo>& modules);

  void write(const Event& e);
  // Writes pending tables and events as whole chunks and hands them to the OS.
  void flush();
  // Flushes, writes the footer (the totals) and closes. Idempotent.
  void close();

  const TraceTotals& totals() const { return totals_; }

 private:
  // Keyed by bytes and looked up through a view of them: a key is copied only when new
  // (the recorder's writer thread interns a site or a stack for nearly every event).
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
  };
  using KeyIds = std::unordered_map<std::string, std::uint32_t, KeyHash, std::equal_to<>>;
  struct CompressorFree {
    void operator()(ZSTD_CCtx_s* c) const;
  };

  TraceWriter(std::FILE* file, const std::string& name, const TraceHeader& header, std::size_t events_per_chunk);
  void write_chunk(ChunkType type, std::uint32_t count, std::uint64_t first_time, const std::string& raw, bool compress);
  void append_to_file(const void* data, std::size_t n);
  template <class Entry, class Row>
  void write_table(ChunkType type, std::uint32_t& first_id, std::vector<Entry>& pending, Row row);

  std::FILE* file_ = nullptr;
  std::string path_;
  std::size_t events_per_chunk_;
  std::uint64_t offset_ = 0;
  KeyIds strings_;
  std::vector<std::string> pending_strings_;
  std::uint32_t first_pending_string_ = 1;
  KeyIds sites_;  // key: file id, line, function id, language
  std::vector<Site> pending_sites_;
  std::unordered_map<std::uint64_t, std::uint32_t> address_sites_;
  std::vector<ModuleInfo> pending_modules_;
  KeyIds native_stacks_;  // key: the return addresses' bytes
  KeyIds stacks_;         // key: the site ids' bytes
  std::vector<std::vector<std::uint32_t>> pending_stacks_;
  std::uint32_t first_pending_stack_ = 1;
  std::uint32_t first_pending_site_ = 1;
  // The events chunk being built: encoded as they arrive.
  std::string pending_raw_;
  std::uint32_t pending_count_ = 0;
  std::uint64_t pending_first_time_ = 0;
  std::uint64_t delta_time_ = 0, delta_address_ = 0, delta_storage_ = 0;
  // Kept from chunk to chunk: zstd's context and the buffer it compresses into.
  std::unique_ptr<ZSTD_CCtx_s, CompressorFree> compressor_;
  std::string compressed_;
  TraceTotals totals_;
};

}  // namespace memlens::profiler
