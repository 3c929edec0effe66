#include "memlens/profiler/event.hpp"
#include "memlens/profiler/trace_format.hpp"

namespace memlens::profiler {

std::string_view kind_name(EventKind k) {
  switch (k) {
    case EventKind::SegmentAlloc: return "segment_alloc";
    case EventKind::SegmentFree: return "segment_free";
    case EventKind::Alloc: return "alloc";
    case EventKind::FreeRequested: return "free_requested";
    case EventKind::FreeCompleted: return "free_completed";
    case EventKind::AllocFailed: return "alloc_failed";
    case EventKind::Oom: return "oom";
    case EventKind::View: return "view";
    case EventKind::Copy: return "copy";
    case EventKind::Op: return "op";
    case EventKind::ScopeBegin: return "scope_begin";
    case EventKind::ScopeEnd: return "scope_end";
    case EventKind::Step: return "step";
    case EventKind::Category: return "category";
  }
  return "unknown";
}

std::string_view category_name(Category c) {
  constexpr std::string_view names[] = {"unknown", "parameter", "gradient", "optimizer_state", "activation",
                                        "temporary", "input"};
  auto i = static_cast<std::size_t>(c);
  return i < std::size(names) ? names[i] : "unknown";
}

std::string_view view_kind_name(ViewKind k) {
  constexpr std::string_view names[] = {"view", "reshape", "transpose", "permute", "expand", "squeeze", "unsqueeze",
                                        "narrow", "select", "slice", "diagonal", "detach", "index"};
  auto i = static_cast<std::size_t>(k);
  return i < std::size(names) ? names[i] : "unknown";
}

std::string_view copy_reason_name(CopyReason r) {
  constexpr std::string_view names[] = {"to_device", "contiguous", "reshape", "clone", "copy_", "index", "op_internal"};
  auto i = static_cast<std::size_t>(r);
  return i < std::size(names) ? names[i] : "unknown";
}

std::string_view language_name(Language l) {
  constexpr std::string_view names[] = {"unknown", "native", "python"};
  auto i = static_cast<std::size_t>(l);
  return i < std::size(names) ? names[i] : "unknown";
}

}  // namespace memlens::profiler
