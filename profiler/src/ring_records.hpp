#pragma once
// The records a recording thread writes into its ring (thread_ring.hpp) and the writer
// thread reads back: the layout of each kind in one place. A record is 64-bit words: a
// RecordHeader (kind, device, sub, flags, length, a small count), the timestamp in ticks,
// then the kind's words. Pointers (call sites, names, stack frames) travel raw; the
// writer thread interns them.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "memlens/profiler/event.hpp"
#include "memlens/runtime/allocator_events.hpp"
#include "thread_ring.hpp"

namespace memlens::profiler::ring_records {

// Fixed sizes in words, header and timestamp included; a failure's stack follows it.
inline constexpr std::size_t kAllocatorWords = 9;   // segments, blocks, retries
inline constexpr std::size_t kFailureWords = 13;    // AllocFailed, Oom: and the device's state
inline constexpr std::size_t kCopyWords = 6;
inline constexpr std::size_t kCategoryWords = 3;
inline constexpr std::size_t kMarkWords = 4;        // scopes and steps

inline std::size_t view_words(std::size_t ndim) { return 6 + 2 * ndim; }
inline std::size_t dims_words(const std::vector<std::int64_t>& dims) {
  return 1 + std::min<std::size_t>(dims.size(), ShapeRecord::kMaxDims);
}

inline std::uint64_t header(EventKind kind, std::uint8_t device, std::uint8_t sub, std::uint8_t flags, std::size_t words,
                            std::size_t extra) {
  return RecordHeader{static_cast<std::uint8_t>(kind), device, sub, flags, static_cast<std::uint16_t>(words),
                      static_cast<std::uint16_t>(extra)}.pack();
}
inline std::uint64_t ptr(const void* p) { return reinterpret_cast<std::uint64_t>(p); }

// An allocator event: `depth` stack frames are already at w + (failure ? kFailureWords : kAllocatorWords).
inline void put_allocator(std::uint64_t* w, std::uint8_t device, const AllocatorEvent& a, std::uint64_t stamp,
                          const void* site, int depth) {
  bool failure = a.kind == EventKind::AllocFailed || a.kind == EventKind::Oom;
  std::size_t n = failure ? kFailureWords : kAllocatorWords;
  bool pooled = a.kind == EventKind::SegmentAlloc || a.kind == EventKind::SegmentFree || a.kind == EventKind::AllocRetry;
  w[0] = header(a.kind, device, pooled && a.pool == Pool::Large, 0, n + static_cast<std::size_t>(depth),
                static_cast<std::size_t>(depth));
  w[1] = stamp;
  w[2] = a.address, w[3] = static_cast<std::uint64_t>(a.size), w[4] = static_cast<std::uint64_t>(a.requested);
  w[5] = a.segment, w[6] = a.storage, w[7] = ptr(site);
  w[8] = static_cast<std::uint64_t>(static_cast<std::int64_t>(a.stream));
  if (failure) {
    w[9] = static_cast<std::uint64_t>(a.device_free), w[10] = static_cast<std::uint64_t>(a.reserved);
    w[11] = static_cast<std::uint64_t>(a.allocated), w[12] = static_cast<std::uint64_t>(a.largest_free_block);
  }
}

inline void put_view(std::uint64_t* w, std::uint8_t device, std::uint64_t stamp, std::uint64_t tensor, std::uint64_t storage,
                     ViewKind kind, ScalarType dtype, const std::vector<std::int64_t>& sizes,
                     const std::vector<std::int64_t>& strides, std::int64_t offset, const void* site, std::size_t ndim) {
  w[0] = header(EventKind::View, device, static_cast<std::uint8_t>(kind), static_cast<std::uint8_t>(dtype), view_words(ndim),
                ndim);
  w[1] = stamp;
  w[2] = tensor, w[3] = storage, w[4] = static_cast<std::uint64_t>(offset), w[5] = ptr(site);
  for (std::size_t i = 0; i < ndim; ++i) {
    w[6 + i] = static_cast<std::uint64_t>(sizes[i]);
    w[6 + ndim + i] = static_cast<std::uint64_t>(i < strides.size() ? strides[i] : 0);
  }
}

inline void put_copy(std::uint64_t* w, std::uint8_t src_device, std::uint8_t dst_device, std::uint64_t stamp,
                     const void* src, const void* dst, std::uint64_t bytes, CopyReason reason, const void* site) {
  w[0] = header(EventKind::Copy, dst_device, static_cast<std::uint8_t>(reason), 0, kCopyWords, src_device);
  w[1] = stamp;
  w[2] = ptr(dst), w[3] = ptr(src), w[4] = bytes, w[5] = ptr(site);
}

// A shape: its length, then its dims (deeper tensors keep their first 8).
inline std::uint64_t* put_dims(std::uint64_t* w, const std::vector<std::int64_t>& dims) {
  std::size_t n = std::min<std::size_t>(dims.size(), ShapeRecord::kMaxDims);
  *w++ = n;
  for (std::size_t i = 0; i < n; ++i) *w++ = static_cast<std::uint64_t>(dims[i]);
  return w;
}

// An op: its end in w[1], its start in w[2], then its output's and inputs' shapes.
inline void put_op(std::uint64_t* w, std::size_t words, std::uint8_t device, std::uint64_t end, std::uint64_t start,
                   const char* name, std::uint64_t output_bytes, bool broadcast, const void* site,
                   const std::vector<std::int64_t>& output, const std::vector<std::int64_t>* const* inputs, int n_inputs) {
  w[0] = header(EventKind::Op, device, 0, broadcast, words, static_cast<std::size_t>(n_inputs));
  w[1] = end;
  w[2] = start, w[3] = ptr(name), w[4] = output_bytes, w[5] = ptr(site);
  std::uint64_t* p = put_dims(w + 6, output);
  for (int i = 0; i < n_inputs; ++i) p = put_dims(p, *inputs[i]);
}

inline void put_category(std::uint64_t* w, std::uint8_t device, std::uint64_t stamp, std::uint64_t storage, Category c) {
  w[0] = header(EventKind::Category, device, static_cast<std::uint8_t>(c), 0, kCategoryWords, 0);
  w[1] = stamp;
  w[2] = storage;
}

// ScopeBegin, ScopeEnd (a name), Step (its number).
inline void put_mark(std::uint64_t* w, EventKind kind, std::uint64_t stamp, const char* name, std::uint64_t step) {
  w[0] = header(kind, 0, 0, 0, kMarkWords, 0);
  w[1] = stamp;
  w[2] = ptr(name), w[3] = step;
}

// What a record holds besides the Event's fields, for the writer thread to intern.
struct Pointers {
  const void* site = nullptr;
  const char* name = nullptr;
  const std::uint64_t* frames = nullptr;
  int depth = 0;
};

// Reads a record back into `e` (times still in ticks; an op's duration too).
Pointers decode(const std::uint64_t* w, const RecordHeader& h, Event& e);

}  // namespace memlens::profiler::ring_records
