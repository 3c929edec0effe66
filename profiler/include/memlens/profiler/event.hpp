#pragma once
// The event vocabulary: one header shared by everything that writes and reads traces.
// An Event is plain data; which fields a kind uses is listed beside each field and in
// docs/trace-format.md, and the codec writes only those.
#include <array>
#include <cstdint>
#include <string_view>

#include "memlens/common/event_kinds.hpp"

namespace memlens::profiler {

// The kinds and their enums are the floor's (memlens/common/event_kinds.hpp): the runtime
// emits them, the trace stores them as is.
using memlens::Category;
using memlens::CopyReason;
using memlens::EventKind;
using memlens::kEventKindCount;
using memlens::ViewKind;
using memlens::category_name;
using memlens::copy_reason_name;
using memlens::kind_name;
using memlens::view_kind_name;

// A shape or stride list of up to 8 dims (deeper tensors are recorded by their first 8).
struct ShapeRecord {
  static constexpr int kMaxDims = 8;
  std::uint8_t ndim = 0;
  std::array<std::int64_t, kMaxDims> dims{};
  bool operator==(const ShapeRecord&) const = default;
};

struct Event {
  EventKind kind = EventKind::Step;
  std::uint64_t time_ns = 0;  // monotonic clock of the header
  std::uint32_t thread = 0;   // small thread number, 0 = first thread seen
  std::uint8_t device = 0;    // index into the header's device list (every kind); Copy: destination

  std::uint64_t address = 0;   // segment, block; Copy: destination address
  std::uint64_t address2 = 0;  // Alloc: its segment; Copy: source address
  std::uint64_t size = 0;      // bytes: segment, block (rounded), copy, op output; AllocFailed/Oom: requested
  std::uint64_t requested = 0; // Alloc: bytes asked for
  std::int32_t stream = 0;     // segment and block events
  std::uint8_t device2 = 0;    // Copy: source device
  std::uint64_t storage = 0;   // Alloc, Free*, View, Category
  std::uint64_t tensor = 0;    // View
  std::uint8_t sub = 0;        // Category / ViewKind / CopyReason / pool (0 small, 1 large) by kind
  std::uint32_t site = 0;      // interned call site, 0 = unknown
  std::uint32_t stack = 0;     // Alloc, AllocFailed, Oom: interned native stack, 0 = none
  std::uint32_t name = 0;      // interned string: Op and Scope names
  std::uint64_t duration_ns = 0;  // Op
  bool broadcast = false;         // Op: elementwise, and the output is larger than every input
  std::int64_t offset = 0;        // View: storage offset in elements
  std::uint8_t dtype = 0;         // View: the tensor's memlens::ScalarType
  std::uint64_t step = 0;         // Step: its number
  std::uint64_t free_bytes = 0, reserved = 0, allocated = 0;  // AllocFailed / Oom: device state
  ShapeRecord shape, strides;     // View: sizes and strides; Op: output shape
  std::uint8_t n_inputs = 0;      // Op
  std::array<ShapeRecord, 4> inputs{};

  bool operator==(const Event&) const = default;
};

}  // namespace memlens::profiler
