#pragma once
// The trace's typed event vocabulary, one header for everything that writes and reads
// traces (recorder, CUPTI collector, snapshot importer, reader, analyses), in the manner
// of Tracy's TracyQueue.hpp: a common head (kind, time, thread, device), then a union of
// one plain struct per kind holding only that kind's fields. Kinds with the same fields
// share a struct. The kinds and their enums are the floor's (memlens/common/event_kinds.hpp),
// so the runtime emits exactly these; the per-kind field lists (src/event_fields.hpp)
// are the file format, and docs/trace-format.md lists the same fields (a test holds it to).
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "memlens/common/event_kinds.hpp"
#include "memlens/common/scalar_type.hpp"

namespace memlens::profiler {

using memlens::Category;
using memlens::category_name;
using memlens::copy_reason_name;
using memlens::CopyReason;
using memlens::EventKind;
using memlens::kEventKindCount;
using memlens::kind_name;
using memlens::Pool;
using memlens::view_kind_name;
using memlens::ViewKind;

// A shape or stride list of up to 8 dims (deeper tensors are recorded by their first 8).
struct ShapeRecord {
  static constexpr int kMaxDims = 8;
  std::uint8_t ndim = 0;
  std::array<std::int64_t, kMaxDims> dims{};
  // Only the first `ndim` dims are part of the shape.
  bool operator==(const ShapeRecord& o) const;
};

// SegmentAlloc, SegmentFree: a segment (or an expandable segment's pages) taken from or
// given back to the device.
struct SegmentEvent {
  std::uint64_t address = 0;
  std::uint64_t size = 0;  // bytes
  std::int32_t stream = 0;
  Pool pool = Pool::Large;
  bool operator==(const SegmentEvent&) const = default;
};

// Alloc: a block handed to a storage.
struct AllocEvent {
  std::uint64_t address = 0;
  std::uint64_t segment = 0;    // the segment it was carved from
  std::uint64_t size = 0;       // bytes of the block (rounded)
  std::uint64_t requested = 0;  // bytes the program asked for
  std::uint64_t storage = 0;    // the owning storage, 0 for none
  std::int32_t stream = 0;
  Category category = Category::Unknown;  // known at allocation (imported runs); else Category events say it
  std::uint32_t site = 0;                 // interned call site, 0 = unknown
  std::uint32_t stack = 0;                // interned stack, 0 = none
  bool operator==(const AllocEvent&) const = default;
};

// FreeRequested (the program freed it), FreeCompleted (it is back in its pool).
struct FreeEvent {
  std::uint64_t address = 0;
  std::uint64_t size = 0;  // bytes of the block (rounded)
  std::uint64_t storage = 0;
  std::int32_t stream = 0;
  bool operator==(const FreeEvent&) const = default;
};

// AllocFailed (the device refused `size` bytes for a segment; the allocator may still
// succeed after freeing its cache) and Oom (a request failed for good: `size` is the
// rounded request, the block the allocator looked for).
struct FailureEvent {
  std::uint64_t size = 0;       // bytes asked of the device (AllocFailed) or the pool (Oom), rounded
  std::uint64_t requested = 0;  // bytes the program asked for
  std::uint64_t device_free = 0, reserved = 0, allocated = 0;  // the device's state then (Oom; 0 when unknown)
  std::uint64_t largest_free_block = 0;                        // in the allocator's cache (Oom)
  std::int32_t stream = 0;
  std::uint32_t site = 0;
  std::uint32_t stack = 0;
  bool operator==(const FailureEvent&) const = default;
};

// AllocRetry: the allocator freed its cached segments to retry a request.
struct RetryEvent {
  std::uint64_t size = 0;       // the rounded request
  std::uint64_t requested = 0;  // bytes the program asked for
  std::int32_t stream = 0;
  Pool pool = Pool::Large;
  std::uint32_t site = 0;
  bool operator==(const RetryEvent&) const = default;
};

// View: a tensor that shares a storage.
struct ViewEvent {
  std::uint64_t tensor = 0;
  std::uint64_t storage = 0;
  std::int64_t offset = 0;  // storage offset in elements
  ViewKind view = ViewKind::View;
  ScalarType dtype = ScalarType::Float32;
  std::uint32_t site = 0;
  ShapeRecord sizes, strides;
  bool operator==(const ViewEvent&) const = default;
};

// Copy: bytes copied between or within devices (the head's device is the destination).
struct CopyEvent {
  std::uint64_t dst_address = 0;
  std::uint64_t src_address = 0;
  std::uint64_t bytes = 0;
  std::uint8_t src_device = 0;  // index into the header's device list
  CopyReason reason = CopyReason::Copy;
  std::uint32_t site = 0;
  bool operator==(const CopyEvent&) const = default;
};

// One of an op's tensors: its sizes, its strides (in elements, as many as its sizes), its
// dtype, the device it is on, and where it lies: its storage and offset, so an analysis can
// follow data from op to op (what an output was computed from).
struct TensorRecord {
  ShapeRecord sizes, strides;
  ScalarType dtype = ScalarType::Float32;
  std::uint8_t device = 0;    // index into the header's device list
  std::uint64_t storage = 0;  // 0: not known
  std::int64_t offset = 0;    // into the storage, in elements
  bool operator==(const TensorRecord&) const = default;
  // A tensor of these sizes laid out row-major (its strides worked out).
  static TensorRecord contiguous(const ShapeRecord& sizes, ScalarType dtype = ScalarType::Float32, std::uint8_t device = 0);
};

// Op: an operator ran.
struct OpEvent {
  static constexpr std::size_t kMaxInputs = 4;
  std::uint32_t name = 0;  // interned string
  std::uint32_t site = 0;
  std::uint64_t bytes = 0;  // of its output
  std::uint64_t duration_ns = 0;
  bool broadcast = false;     // elementwise, and the output is larger than every input
  std::uint8_t n_inputs = 0;  // recorded input tensors (the first kMaxInputs)
  TensorRecord output;
  std::array<TensorRecord, kMaxInputs> inputs{};
  bool operator==(const OpEvent& o) const;
};

// ScopeBegin, ScopeEnd: a user annotation ("forward").
struct ScopeEvent {
  std::uint32_t name = 0;  // interned string
  bool operator==(const ScopeEvent&) const = default;
};

// Step: an iteration boundary.
struct StepEvent {
  std::uint64_t number = 0;  // from 1
  bool operator==(const StepEvent&) const = default;
};

// Category: a storage's role changed.
struct CategoryEvent {
  std::uint64_t storage = 0;
  Category category = Category::Unknown;
  bool operator==(const CategoryEvent&) const = default;
};

// The head every kind has, then the kind's fields: read only the member `kind` names.
struct Event {
  EventKind kind = EventKind::Step;
  std::uint8_t device = 0;    // index into the header's device list
  std::uint32_t thread = 0;   // small thread number, 0 = first thread seen
  std::uint64_t time_ns = 0;  // the header's clock
  union {
    SegmentEvent segment;    // SegmentAlloc, SegmentFree
    AllocEvent alloc;        // Alloc
    FreeEvent free;          // FreeRequested, FreeCompleted
    FailureEvent failure;    // AllocFailed, Oom
    RetryEvent retry;        // AllocRetry
    ViewEvent view;          // View
    CopyEvent copy;          // Copy
    OpEvent op;              // Op
    ScopeEvent scope;        // ScopeBegin, ScopeEnd
    StepEvent step;          // Step
    CategoryEvent category;  // Category
  };

  Event() : step() {}
  Event(EventKind k, const SegmentEvent& f) : kind(k), segment(f) {}
  Event(EventKind k, const AllocEvent& f) : kind(k), alloc(f) {}
  Event(EventKind k, const FreeEvent& f) : kind(k), free(f) {}
  Event(EventKind k, const FailureEvent& f) : kind(k), failure(f) {}
  Event(EventKind k, const RetryEvent& f) : kind(k), retry(f) {}
  Event(EventKind k, const ViewEvent& f) : kind(k), view(f) {}
  Event(EventKind k, const CopyEvent& f) : kind(k), copy(f) {}
  Event(EventKind k, const OpEvent& f) : kind(k), op(f) {}
  Event(EventKind k, const ScopeEvent& f) : kind(k), scope(f) {}
  Event(EventKind k, const StepEvent& f) : kind(k), step(f) {}
  Event(EventKind k, const CategoryEvent& f) : kind(k), category(f) {}

  // Becomes a `k` event with that kind's fields at their defaults (the head is kept).
  void reset(EventKind k);
  // The call site of the kinds that have one (alloc, failures, retry, view, copy, op), else 0.
  std::uint32_t site() const;
  // The stack of the kinds that have one (alloc, failures), else 0.
  std::uint32_t stack() const;
  // The interned name of an op or scope, else 0.
  std::uint32_t name() const;
  // The kind's own site, stack and name (op, scopes) fields, null for kinds without: for
  // writers that learn an id after the event's fields (interned by the writer thread).
  std::uint32_t* site_field();
  std::uint32_t* stack_field();
  std::uint32_t* name_field();
  // The head and the kind's fields.
  bool operator==(const Event& o) const;
};

// A kind's fields in file order, as the codec writes them and docs/trace-format.md lists
// them ("inputs" stands for an op's recorded input shapes).
std::vector<std::string_view> field_names(EventKind k);

// The struct that holds each kind's fields: the codec and the docs walk the same pairs.
static_assert(kEventKindCount == 15, "a new kind needs its struct in Event, its field list (event_fields.hpp) and the docs");
static_assert(sizeof(SegmentEvent) == 24);
static_assert(sizeof(AllocEvent) == 56);
static_assert(sizeof(FreeEvent) == 32);
static_assert(sizeof(FailureEvent) == 64);
static_assert(sizeof(RetryEvent) == 32);
static_assert(sizeof(ShapeRecord) == 72);
static_assert(sizeof(TensorRecord) == 168);
static_assert(sizeof(ViewEvent) == 176);
static_assert(sizeof(CopyEvent) == 32);
static_assert(sizeof(OpEvent) == 872);
static_assert(sizeof(Event) == 888, "the largest kind (an op with its tensors) sets the size");

}  // namespace memlens::profiler
