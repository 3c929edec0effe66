#pragma once
// Reads a .memtrace file: a streaming visitor over events in order, random access by
// chunk, and the interned tables. A trace without footer (the program died) is read up
// to its last whole chunk; a corrupt chunk ends the readable part, also one found only
// when a pass decodes it (the chunks before it stay readable). Both are reported by
// problem(), never by a crash. Checksums are verified once, when a chunk is first scanned.
// A trace still being written can be read again as it grows (refresh()).
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "memlens/common/mapped_file.hpp"
#include "memlens/trace/event.hpp"
#include "memlens/trace/trace_format.hpp"

namespace memlens::profiler {

class Symbolizer;

class TraceReader {
 public:
  // Reads the header and scans the chunks; throws TraceError ("FILE: not a memlens trace
  // (bad magic)") when the file cannot be a trace at all.
  explicit TraceReader(const std::string& path);
  // The same over a file already mapped (memlens/input opens each input once); messages
  // and path() call it `name` (a snapshot converted in memory is named for the snapshot).
  TraceReader(MappedFile file, const std::string& name);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  // What refresh() found.
  enum class Refresh { Unchanged, Grew, Replaced };
  // For a trace still being recorded: maps the file again and scans the whole chunks
  // appended since the last look, from where that look stopped (nothing is read twice).
  // Replaced: the path now names another file, or this one was cut shorter; this reader
  // keeps what it read and a follower opens a new one. Unchanged for a reader not opened
  // from a path, after the footer, or after a corrupt chunk. Not to be called while
  // another thread uses this reader.
  Refresh refresh();
  // Whether refresh() may find more: the last scan stopped at the end of the file, not at
  // the footer or a chunk that is corrupt (or that a pass could not decode).
  bool may_grow() const { return scan_resumable_ && !decode_failed_; }

  const TraceHeader& header() const { return header_; }
  const std::string& path() const { return path_; }
  // Every readable events chunk, in file order.
  std::vector<ChunkInfo> chunks() const;
  std::size_t chunk_count() const { return readable_chunks_.load(); }
  // Calls `visit` for every event, in order. A chunk that does not decode ends this pass
  // and every later one there; problem() then says where. With `until_ns` (a time of the
  // trace's clock), chunks that start after it are not read: a visit to the start of a
  // long trace costs what that start holds (the last chunk read may pass it; the caller
  // skips those events).
  void for_each(const std::function<void(const Event&)>& visit, std::uint64_t until_ns = UINT64_MAX) const;
  // As for_each, from chunk `first` (an index into chunks()) on, calling `at_chunk(i)`
  // before chunk i is decoded: where a caller keeps its state, as memory_at's checkpoints.
  void for_each_from(std::size_t first, const std::function<void(std::size_t)>& at_chunk,
                     const std::function<void(const Event&)>& visit, std::uint64_t until_ns = UINT64_MAX) const;
  // The events of one chunk (random access for a viewer's time window).
  std::vector<Event> read_chunk(std::size_t i) const;

  const std::string& string(std::uint32_t id) const;  // "" for 0 or unknown
  // A site with file, line and function, symbolising recorded code addresses with the
  // trace's module table on first use. {} for 0 or unknown.
  SiteInfo site(std::uint32_t id) const;
  // Ids below this name a site of the trace's table (0 is "none").
  std::size_t site_count() const { return sites_.size(); }
  // "file:line" of a site, "" when unknown.
  std::string site_location(std::uint32_t id) const;
  const std::vector<ModuleInfo>& modules() const { return modules_; }
  // Modules whose sites site() could not give a line because they have no line tables
  // (built without -g), among the sites resolved so far.
  std::vector<std::string> modules_without_lines() const;
  // A stack, innermost frame first, each frame resolved as site() does. {} for 0 or unknown.
  std::vector<SiteInfo> stack(std::uint32_t id) const;
  // Its frames as site ids (no symbolising). {} for 0 or unknown.
  const std::vector<std::uint32_t>& stack_sites(std::uint32_t id) const;

  bool has_footer() const { return footer_.has_value(); }
  // The footer's totals, when it is there.
  const std::optional<TraceTotals>& footer_totals() const { return footer_; }
  // Totals of the events that could be read (per kind: counted on first call, one pass).
  const TraceTotals& totals() const;
  // Why the trace is incomplete ("" when it is whole).
  std::string problem() const;

 private:
  // Scans chunks from `offset` to the end of the mapping, or to the footer or a corrupt chunk.
  void scan_chunks(std::uint64_t offset);
  // What is wrong with the trailer after the footer chunk, "" when it is whole.
  std::string trailer_problem(std::uint64_t footer_offset, std::uint64_t after_footer) const;
  // Decodes one events chunk into `raw` (a buffer reused from chunk to chunk) and visits its
  // events; returns the offset after it. Throws TraceError naming its offset if it is malformed.
  std::uint64_t decode_chunk(const ChunkInfo& c, std::string& raw, const std::function<void(const Event&)>& visit) const;
  // What a chunk's header says, once checked.
  struct ChunkHeader {
    ChunkType type{};
    std::uint32_t count = 0;
    std::uint64_t first_time_ns = 0;
    std::uint64_t next = 0;  // the offset after the chunk
  };
  // Checks the chunk at `offset` (its checksum too if `verify`) and puts its payload in
  // `out` (an events chunk's only if `events_too`). Throws TraceError naming the chunk, or
  // TruncatedChunkError (chunk_io.hpp) where the file ends inside it.
  ChunkHeader read_payload(std::uint64_t offset, bool events_too, bool verify, std::string& out) const;

  std::string path_;
  std::unique_ptr<MappedFile> data_;                // the whole file, mapped
  bool from_path_ = false;                          // opened from path_ (refresh() looks there), not handed a mapping
  std::uint64_t scan_end_ = 0;                      // where the scan stopped
  bool scan_resumable_ = false;                     // it stopped at the end of the file, not a footer or a corrupt chunk
  mutable std::atomic<bool> decode_failed_{false};  // a pass met a chunk that does not decode
  TraceHeader header_;
  std::vector<ChunkInfo> event_chunks_;
  std::vector<std::string> strings_{""};
  std::vector<Site> sites_{Site{}};
  std::vector<ModuleInfo> modules_;
  std::vector<std::vector<std::uint32_t>> stacks_{{}};
  mutable std::unique_ptr<Symbolizer> symbolizer_;
  std::optional<TraceTotals> footer_;
  mutable TraceTotals totals_;
  mutable bool by_kind_counted_ = false;
  mutable std::atomic<std::size_t> readable_chunks_{0};  // event_chunks_ that decode (passes may find fewer)
  mutable std::mutex problem_mutex_;
  mutable std::string problem_;
};

}  // namespace memlens::profiler
