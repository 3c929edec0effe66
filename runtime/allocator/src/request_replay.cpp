#include "memlens/allocator/request_replay.hpp"

#include "memlens/common/number_text.hpp"

#include <sstream>
#include <unordered_map>

#include "memlens/allocator/caching_allocator.hpp"
#include "memlens/allocator/memory.hpp"
#include "memlens/allocator/memory_source.hpp"

namespace memlens {

namespace {

std::vector<std::string> fields_of(const std::string& line) {
  std::string s = line;
  for (auto& c : s)
    if (c == ',' || c == '\t' || c == ';') c = ' ';
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::uint64_t parse_id(const std::string& text, const std::string& where) {
  try {
    return parse_count(text, 0, UINT64_MAX);
  } catch (const NumberError&) {
    throw ReplayError(where + ": bad id '" + text + "' (expected a non-negative integer)");
  }
}

// Counts failed attempts as the allocator reports them.
class OomLog final : public AllocatorObserver {
 public:
  void on_event(const AllocatorEvent& e) override {
    if (e.kind == EventKind::Oom) last = e;
  }
  AllocatorEvent last{EventKind::Oom};
};

}  // namespace

std::vector<ReplayRequest> parse_replay(std::istream& in, const std::string& name) {
  std::vector<ReplayRequest> out;
  std::string line;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    auto f = fields_of(line);
    if (f.empty() || (n == 1 && f[0] == "op")) continue;
    std::string where = name + ":" + std::to_string(n);
    ReplayRequest r{};
    r.line = n;
    if (f[0] == "alloc") {
      if (f.size() < 3 || f.size() > 4) throw ReplayError(where + ": expected 'alloc ID BYTES [STREAM]'");
      r.op = ReplayRequest::Op::Alloc;
      r.id = parse_id(f[1], where);
      try {
        r.bytes = parse_byte_size(f[2]);
      } catch (const NumberError& e) {
        throw ReplayError(where + ": " + e.what());
      }
      if (f.size() == 4) r.stream = static_cast<StreamId>(parse_id(f[3], where));
    } else if (f[0] == "free") {
      if (f.size() != 2) throw ReplayError(where + ": expected 'free ID'");
      r.op = ReplayRequest::Op::Free;
      r.id = parse_id(f[1], where);
    } else {
      throw ReplayError(where + ": unknown request '" + f[0] + "' (expected alloc or free)");
    }
    out.push_back(r);
  }
  return out;
}

ReplayResult replay(const std::vector<ReplayRequest>& requests, const ReplayOptions& options) {
  CachingAllocator alloc(std::make_unique<SimSource>(options.capacity, SimSource::Backing::None), options.config);
  OomLog oom_log;
  alloc.add_observer(&oom_log);
  ReplayResult r;
  std::unordered_map<std::uint64_t, void*> live;
  std::unordered_map<std::uint64_t, bool> failed;  // ids whose alloc hit an OOM: their free is a no-op
  for (const auto& q : requests) {
    if (q.op == ReplayRequest::Op::Alloc) {
      if (live.count(q.id))
        throw ReplayError("line " + std::to_string(q.line) + ": id " + std::to_string(q.id) + " is allocated twice");
      try {
        live[q.id] = alloc.allocate(q.bytes, q.stream);
        ++r.allocs;
      } catch (const OutOfMemoryError&) {
        const auto& e = oom_log.last;
        r.ooms.push_back({q.line, q.bytes, e.reserved, e.allocated, e.largest_free_block});
        failed[q.id] = true;
      }
    } else {
      auto it = live.find(q.id);
      if (it == live.end()) {
        if (failed.erase(q.id)) continue;
        throw ReplayError("line " + std::to_string(q.line) + ": free of id " + std::to_string(q.id) + ", which is not allocated");
      }
      alloc.deallocate(it->second);
      live.erase(it);
      ++r.frees;
    }
    AllocatorStats s = alloc.stats();
    if (s.reserved_bytes.all.current > r.peak_reserved || r.peak_reserved == 0) {
      r.peak_reserved = s.reserved_bytes.all.current;
      auto allocated = s.allocated_bytes.all.current;
      r.reserved_over_allocated_at_peak =
          allocated > 0 ? static_cast<double>(r.peak_reserved) / static_cast<double>(allocated) : 0;
    }
  }
  for (auto& [id, p] : live) alloc.deallocate(p);
  AllocatorStats s = alloc.stats();
  r.peak_allocated = s.allocated_bytes.all.peak;
  r.final_reserved = s.reserved_bytes.all.current;
  r.num_alloc_retries = s.num_alloc_retries;
  r.num_device_alloc = s.num_device_alloc;
  alloc.remove_observer(&oom_log);
  return r;
}

std::string format_replay(const ReplayResult& r, const ReplayOptions& options) {
  std::ostringstream out;
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.2f", r.reserved_over_allocated_at_peak);
  out << "config " << options.config.to_string() << ", capacity " << format_bytes(static_cast<std::int64_t>(options.capacity))
      << "\n";
  out << "  " << r.allocs << " allocs, " << r.frees << " frees; peak allocated " << format_bytes(r.peak_allocated)
      << ", peak reserved " << format_bytes(r.peak_reserved) << " (reserved/allocated " << ratio << " at the peak)\n";
  out << "  device allocs " << r.num_device_alloc << ", alloc retries " << r.num_alloc_retries << ", OOMs " << r.ooms.size()
      << "\n";
  for (const auto& o : r.ooms)
    out << "  OOM at line " << o.line << ": " << format_bytes(static_cast<std::int64_t>(o.bytes)) << " with "
        << format_bytes(o.reserved) << " reserved, " << format_bytes(o.allocated) << " allocated, largest free block "
        << format_bytes(o.largest_free_block) << "\n";
  return out.str();
}

}  // namespace memlens
