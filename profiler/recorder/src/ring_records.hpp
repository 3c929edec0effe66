#pragma once
// The records a recording thread writes into its ring (thread_ring.hpp) and the writer
// thread reads back: the layout of each kind in one place. A record is 64-bit words: a
// RecordHeader (kind, device, sub, flags, length, a small count), the timestamp in ticks,
// then the kind's words. Pointers (call sites, names, stack frames) travel raw; the
// writer thread interns them.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "memlens/trace/event.hpp"
#include "memlens/allocator/allocator_events.hpp"
#include "memlens/tensor/instrument.hpp"
#include "thread_ring.hpp"

namespace memlens::profiler::ring_records {

// Each record's words by name: the put_* functions below write them and decode() reads
// them, so a layout is stated once. Every record starts with its header and its time.
enum CommonWord : std::size_t { kHeaderWord, kStampWord };
// Segments, blocks and retries; AllocFailed and Oom add the device's state. The stack's
// frames follow either. kSequence: the event's place among its allocator's events (taken
// under the allocator's lock), by which the writer orders the threads' records.
enum AllocatorWord : std::size_t {
  kAddress = 2,
  kSize,
  kRequested,
  kSegment,
  kStorage,
  kAllocSite,
  kStream,
  kSequence,
  kAllocatorEnd
};
enum FailureWord : std::size_t { kDeviceFree = kAllocatorEnd, kReserved, kAllocated, kLargestFree, kFailureEnd };
// The sizes then the strides follow, ndim each.
enum ViewWord : std::size_t { kTensor = 2, kViewStorage, kOffset, kViewSite, kViewDims };
enum CopyWord : std::size_t { kDst = 2, kSrc, kBytes, kCopySite, kCopyEnd };
// An op's end is its time; the output's and inputs' tensors follow (put_tensor).
enum OpWord : std::size_t { kOpStart = 2, kOpName, kOpBytes, kOpSite, kOpTensors };
enum CategoryWord : std::size_t { kCategoryStorage = 2, kCategoryEnd };
// ScopeBegin, ScopeEnd (a name), Step (its number); then, one word per device, how many
// of that device's allocator events had happened when the mark was made (the writer puts
// the mark after them).
enum MarkWord : std::size_t { kMarkName = 2, kStepNumber, kMarkEnd };
// The fixed records' sizes in words, header and time included.
inline constexpr std::size_t kAllocatorWords = kAllocatorEnd, kFailureWords = kFailureEnd, kCopyWords = kCopyEnd,
                             kCategoryWords = kCategoryEnd, kMarkWords = kMarkEnd;
static_assert(kAllocatorWords == 10 && kFailureWords == 14 && kCopyWords == 6 && kCategoryWords == 3 && kMarkWords == 4);

inline std::size_t view_words(std::size_t ndim) { return kViewDims + 2 * ndim; }
// An op's tensor: a word of its dim count, dtype and device, its storage and offset, then
// its sizes and strides (deeper tensors keep their first 8 dims).
inline std::size_t tensor_ndim(const instrument::OpTensor& t) {
  return std::min<std::size_t>(t.sizes->size(), ShapeRecord::kMaxDims);
}
inline std::size_t tensor_words(const instrument::OpTensor& t) { return 3 + 2 * tensor_ndim(t); }

inline std::uint64_t header(EventKind kind, std::uint8_t device, std::uint8_t sub, std::uint8_t flags, std::size_t words,
                            std::size_t extra) {
  return RecordHeader{static_cast<std::uint8_t>(kind),  device, sub, flags, static_cast<std::uint16_t>(words),
                      static_cast<std::uint16_t>(extra)}
      .pack();
}
inline std::uint64_t ptr(const void* p) { return reinterpret_cast<std::uint64_t>(p); }

// An allocator event: `depth` stack frames are already at w + (failure ? kFailureWords : kAllocatorWords).
inline void put_allocator(std::uint64_t* w, std::uint8_t device, const AllocatorEvent& a, std::uint64_t stamp, const void* site,
                          int depth, std::uint64_t sequence) {
  bool failure = a.kind == EventKind::AllocFailed || a.kind == EventKind::Oom;
  std::size_t n = failure ? kFailureWords : kAllocatorWords;
  bool pooled = a.kind == EventKind::SegmentAlloc || a.kind == EventKind::SegmentFree || a.kind == EventKind::AllocRetry;
  w[kHeaderWord] = header(a.kind, device, pooled && a.pool == Pool::Large, 0, n + static_cast<std::size_t>(depth),
                          static_cast<std::size_t>(depth));
  w[kStampWord] = stamp;
  w[kAddress] = a.address, w[kSize] = static_cast<std::uint64_t>(a.size), w[kRequested] = static_cast<std::uint64_t>(a.requested);
  w[kSegment] = a.segment, w[kStorage] = a.storage, w[kAllocSite] = ptr(site);
  w[kStream] = static_cast<std::uint64_t>(static_cast<std::int64_t>(a.stream));
  w[kSequence] = sequence;
  if (failure) {
    w[kDeviceFree] = static_cast<std::uint64_t>(a.device_free), w[kReserved] = static_cast<std::uint64_t>(a.reserved);
    w[kAllocated] = static_cast<std::uint64_t>(a.allocated), w[kLargestFree] = static_cast<std::uint64_t>(a.largest_free_block);
  }
}

inline void put_view(std::uint64_t* w, std::uint8_t device, std::uint64_t stamp, std::uint64_t tensor, std::uint64_t storage,
                     ViewKind kind, ScalarType dtype, const std::vector<std::int64_t>& sizes,
                     const std::vector<std::int64_t>& strides, std::int64_t offset, const void* site, std::size_t ndim) {
  w[kHeaderWord] =
      header(EventKind::View, device, static_cast<std::uint8_t>(kind), static_cast<std::uint8_t>(dtype), view_words(ndim), ndim);
  w[kStampWord] = stamp;
  w[kTensor] = tensor, w[kViewStorage] = storage, w[kOffset] = static_cast<std::uint64_t>(offset), w[kViewSite] = ptr(site);
  for (std::size_t i = 0; i < ndim; ++i) {
    w[kViewDims + i] = static_cast<std::uint64_t>(sizes[i]);
    w[kViewDims + ndim + i] = static_cast<std::uint64_t>(i < strides.size() ? strides[i] : 0);
  }
}

inline void put_copy(std::uint64_t* w, std::uint8_t src_device, std::uint8_t dst_device, std::uint64_t stamp, const void* src,
                     const void* dst, std::uint64_t bytes, CopyReason reason, const void* site) {
  w[kHeaderWord] = header(EventKind::Copy, dst_device, static_cast<std::uint8_t>(reason), 0, kCopyWords, src_device);
  w[kStampWord] = stamp;
  w[kDst] = ptr(dst), w[kSrc] = ptr(src), w[kBytes] = bytes, w[kCopySite] = ptr(site);
}

inline std::uint64_t* put_tensor(std::uint64_t* w, const instrument::OpTensor& t, std::uint8_t device) {
  const std::size_t n = tensor_ndim(t);
  *w++ = n | static_cast<std::uint64_t>(t.dtype) << 8 | static_cast<std::uint64_t>(device) << 16;
  *w++ = t.storage, *w++ = static_cast<std::uint64_t>(t.offset);
  for (std::size_t i = 0; i < n; ++i) *w++ = static_cast<std::uint64_t>((*t.sizes)[i]);
  for (std::size_t i = 0; i < n; ++i) *w++ = static_cast<std::uint64_t>(i < t.strides->size() ? (*t.strides)[i] : 0);
  return w;
}

// An op: its end as its time and its start; its tensors (the output's, then `n_inputs`
// inputs') follow, put_tensor each. Returns where they go.
inline std::uint64_t* put_op(std::uint64_t* w, std::size_t words, std::uint8_t device, std::uint64_t end, std::uint64_t start,
                             const char* name, std::uint64_t output_bytes, bool broadcast, const void* site, int n_inputs) {
  w[kHeaderWord] = header(EventKind::Op, device, 0, broadcast, words, static_cast<std::size_t>(n_inputs));
  w[kStampWord] = end;
  w[kOpStart] = start, w[kOpName] = ptr(name), w[kOpBytes] = output_bytes, w[kOpSite] = ptr(site);
  return w + kOpTensors;
}

inline void put_category(std::uint64_t* w, std::uint8_t device, std::uint64_t stamp, std::uint64_t storage, Category c) {
  w[kHeaderWord] = header(EventKind::Category, device, static_cast<std::uint8_t>(c), 0, kCategoryWords, 0);
  w[kStampWord] = stamp;
  w[kCategoryStorage] = storage;
}

// A mark: `devices` words of allocator event counts follow, put by the caller.
inline std::uint64_t* put_mark(std::uint64_t* w, EventKind kind, std::uint64_t stamp, const char* name, std::uint64_t step,
                               std::size_t devices) {
  w[kHeaderWord] = header(kind, 0, 0, 0, kMarkWords + devices, devices);
  w[kStampWord] = stamp;
  w[kMarkName] = ptr(name), w[kStepNumber] = step;
  return w + kMarkWords;
}

// What a record must wait for in the trace's order: an allocator event, the events of its
// allocator before it (`device`, `sequence`); a mark, the allocator events it saw happen
// (`seen[d]` for each of `devices`); anything else, nothing but its thread's earlier records.
struct OrderKey {
  bool allocator = false;
  std::uint8_t device = 0;
  std::uint64_t sequence = 0;
  const std::uint64_t* seen = nullptr;
  std::size_t devices = 0;
};
inline OrderKey order_key(const std::uint64_t* w, const RecordHeader& h) {
  switch (static_cast<EventKind>(h.kind)) {
    case EventKind::ScopeBegin:
    case EventKind::ScopeEnd:
    case EventKind::Step:
      return {.seen = w + kMarkWords, .devices = h.extra};
    case EventKind::View:
    case EventKind::Copy:
    case EventKind::Op:
    case EventKind::Category:
      return {};
    default:
      return {.allocator = true, .device = h.device, .sequence = w[kSequence]};
  }
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
