#include "memlens/common/event_kinds.hpp"

#include <array>

namespace memlens {

namespace {
template <std::size_t N>
std::string_view name_of(const std::array<std::string_view, N>& names, std::size_t i) {
  return i < N ? names[i] : "unknown";
}
}  // namespace

std::string_view kind_name(EventKind k) {
  constexpr std::array<std::string_view, kEventKindCount + 1> names = {
      "unknown",  "segment_alloc", "segment_free", "alloc", "free_requested", "free_completed", "alloc_failed",
      "oom",      "view",          "copy",         "op",    "scope_begin",    "scope_end",      "step",
      "category", "alloc_retry"};
  return name_of(names, static_cast<std::size_t>(k));
}

std::string_view category_name(Category c) {
  constexpr std::array<std::string_view, kCategoryCount> names = {"unknown",         "parameter",       "gradient",
                                                                  "optimizer_state", "activation",      "temporary",
                                                                  "input",           "autograd_detail", "before_recording"};
  return name_of(names, static_cast<std::size_t>(c));
}

std::string_view view_kind_name(ViewKind k) {
  constexpr std::array<std::string_view, kViewKindCount> names = {"view",     "reshape",   "transpose", "permute", "expand",
                                                                  "squeeze",  "unsqueeze", "narrow",    "select",  "slice",
                                                                  "diagonal", "detach",    "index"};
  return name_of(names, static_cast<std::size_t>(k));
}

std::string_view copy_reason_name(CopyReason r) {
  constexpr std::array<std::string_view, kCopyReasonCount> names = {"to_device", "contiguous", "reshape",     "clone",
                                                                    "copy_",     "index",      "op_internal", "cast"};
  return name_of(names, static_cast<std::size_t>(r));
}

}  // namespace memlens
