#pragma once
// The kinds of things that happen to memory, and the small enums they carry. The runtime
// emits these, the trace stores them and the analyses read them: one vocabulary, no
// mapping between parts. The fields of each kind are in memlens/trace/event.hpp.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace memlens {

enum class EventKind : std::uint8_t {
  SegmentAlloc = 1,  // the allocator took a segment (or an expandable segment's pages) from the device
  SegmentFree,       // ... gave it back
  Alloc,             // a block handed to a storage
  FreeRequested,     // the program freed it
  FreeCompleted,     // it is back in the allocator's pool (after recorded streams finished)
  AllocFailed,       // the device refused a segment (the allocator may still succeed after a retry)
  Oom,               // a request failed for good
  View,              // a tensor that shares a storage
  Copy,              // bytes copied between or within devices
  Op,                // an operator ran
  ScopeBegin,        // user annotation ("forward")
  ScopeEnd,
  Step,        // iteration boundary
  Category,    // a storage's role changed
  AllocRetry,  // the allocator freed its cache to retry a request
};
inline constexpr std::size_t kEventKindCount = 15;
static_assert(static_cast<std::size_t>(EventKind::AllocRetry) == kEventKindCount, "kinds are numbered 1..count");
constexpr bool is_event_kind(std::uint64_t v) { return v >= 1 && v <= kEventKindCount; }
std::string_view kind_name(EventKind k);  // "alloc", "free_requested", ...

// What a storage is for, as PyTorch's memory timeline groups it: Gradient is a
// parameter's .grad; AutogradDetail a gradient in flight inside backward (an op's
// gradient on its way to the next node); Temporary what an op or a backward function
// allocates and frees within itself.
// BeforeRecording: a block alive before an imported run's first entry (what it is, the
// file cannot say; memlens does not guess).
enum class Category : std::uint8_t {
  Unknown,
  Parameter,
  Gradient,
  OptimizerState,
  Activation,
  Temporary,
  Input,
  AutogradDetail,
  BeforeRecording
};
inline constexpr std::size_t kCategoryCount = 9;
static_assert(static_cast<std::size_t>(Category::BeforeRecording) + 1 == kCategoryCount);
std::string_view category_name(Category c);  // "optimizer_state"

enum class ViewKind : std::uint8_t {
  View,
  Reshape,
  Transpose,
  Permute,
  Expand,
  Squeeze,
  Unsqueeze,
  Narrow,
  Select,
  Slice,
  Diagonal,
  Detach,
  Index
};
inline constexpr std::size_t kViewKindCount = 13;
static_assert(static_cast<std::size_t>(ViewKind::Index) + 1 == kViewKindCount);
std::string_view view_kind_name(ViewKind k);

// Cast: a conversion to another dtype (never a copy made for layout, whatever the input's).
enum class CopyReason : std::uint8_t { ToDevice, Contiguous, Reshape, Clone, Copy, Index, OpInternal, Cast };
inline constexpr std::size_t kCopyReasonCount = 8;
static_assert(static_cast<std::size_t>(CopyReason::Cast) + 1 == kCopyReasonCount);
std::string_view copy_reason_name(CopyReason r);

// The caching allocator's two pools (PyTorch's: blocks of at most 1 MiB come from small
// segments).
enum class Pool : std::uint8_t { Small, Large };
inline constexpr std::size_t kPoolCount = 2;

}  // namespace memlens
