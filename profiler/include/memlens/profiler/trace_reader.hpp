#pragma once
// Reads a .memtrace file: a streaming visitor over events in order, random access by
// chunk, and the interned tables. A trace without footer (the program died) is read up
// to its last whole chunk; a corrupt chunk ends the readable part. Both are reported by
// problem(), never by a crash.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "memlens/profiler/event.hpp"
#include "memlens/profiler/trace_format.hpp"

namespace memlens::profiler {

class Symbolizer;
class MappedFile;

class TraceReader {
 public:
  // Reads the header and scans the chunks; throws TraceError ("FILE: not a memlens trace
  // (bad magic)") when the file cannot be a trace at all.
  explicit TraceReader(const std::string& path);
  ~TraceReader();
  TraceReader(TraceReader&&) noexcept;

  const TraceHeader& header() const { return header_; }
  // Every readable events chunk, in file order.
  const std::vector<ChunkInfo>& chunks() const { return event_chunks_; }
  // Calls `visit` for every event, in order.
  void for_each(const std::function<void(const Event&)>& visit) const;
  // The events of one chunk (random access for a viewer's time window).
  std::vector<Event> read_chunk(std::size_t i) const;

  const std::string& string(std::uint32_t id) const;  // "" for 0 or unknown
  // A site with file, line and function, symbolising recorded code addresses with the
  // trace's module table on first use. {} for 0 or unknown.
  SiteInfo site(std::uint32_t id) const;
  // "file:line" of a site, "" when unknown.
  std::string site_location(std::uint32_t id) const;
  const std::vector<ModuleInfo>& modules() const { return modules_; }
  // A recorded native stack, innermost frame first, symbolised. {} for 0 or unknown.
  std::vector<SiteInfo> stack(std::uint32_t id) const;

  bool has_footer() const { return footer_.has_value(); }
  // The footer's totals, when it is there.
  const std::optional<TraceTotals>& footer_totals() const { return footer_; }
  // Totals of the events that could be read (per kind: counted on first call, one pass).
  const TraceTotals& totals() const;
  // Why the trace is incomplete ("" when it is whole).
  const std::string& problem() const { return problem_; }

 private:
  // Decodes one events chunk; throws TraceError naming its offset if it is malformed.
  void decode_chunk(const ChunkInfo& c, const std::function<void(const Event&)>& visit) const;
  // Checks a chunk and returns its payload (for an events chunk only if `events_too`).
  std::string read_payload(std::uint64_t offset, std::uint32_t* count, std::uint64_t* first_time,
                           ChunkType* type, std::uint64_t* next, bool events_too) const;

  std::string path_;
  std::unique_ptr<MappedFile> data_;  // the whole file, mapped
  TraceHeader header_;
  std::vector<ChunkInfo> event_chunks_;
  std::vector<std::string> strings_{""};
  std::vector<Site> sites_{Site{}};
  std::vector<ModuleInfo> modules_;
  std::vector<std::vector<std::uint64_t>> stacks_{{}};
  mutable std::unique_ptr<Symbolizer> symbolizer_;
  std::optional<TraceTotals> footer_;
  mutable TraceTotals totals_;
  mutable bool by_kind_counted_ = false;
  std::string problem_;
};

}  // namespace memlens::profiler
