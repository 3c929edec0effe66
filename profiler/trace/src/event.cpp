#include "memlens/trace/event.hpp"

#include <algorithm>
#include <memory>

namespace memlens::profiler {

bool ShapeRecord::operator==(const ShapeRecord& o) const {
  return ndim == o.ndim && std::equal(dims.begin(), dims.begin() + std::min<int>(ndim, kMaxDims), o.dims.begin());
}

TensorRecord TensorRecord::contiguous(const ShapeRecord& sizes, ScalarType dtype, std::uint8_t device) {
  TensorRecord t{.sizes = sizes, .strides = {}, .dtype = dtype, .device = device};
  t.strides.ndim = sizes.ndim;
  std::int64_t stride = 1;
  for (int i = sizes.ndim - 1; i >= 0; --i) {
    t.strides.dims[static_cast<std::size_t>(i)] = stride;
    stride *= sizes.dims[static_cast<std::size_t>(i)];
  }
  return t;
}

bool OpEvent::operator==(const OpEvent& o) const {
  if (name != o.name || site != o.site || bytes != o.bytes || duration_ns != o.duration_ns || broadcast != o.broadcast ||
      n_inputs != o.n_inputs || !(output == o.output))
    return false;
  for (std::size_t i = 0; i < std::min<std::size_t>(n_inputs, kMaxInputs); ++i)
    if (!(inputs[i] == o.inputs[i])) return false;
  return true;
}

void Event::reset(EventKind k) {
  kind = k;
  switch (k) {
    case EventKind::SegmentAlloc:
    case EventKind::SegmentFree:
      std::construct_at(&segment);
      break;
    case EventKind::Alloc:
      std::construct_at(&alloc);
      break;
    case EventKind::FreeRequested:
    case EventKind::FreeCompleted:
      std::construct_at(&free);
      break;
    case EventKind::AllocFailed:
    case EventKind::Oom:
      std::construct_at(&failure);
      break;
    case EventKind::AllocRetry:
      std::construct_at(&retry);
      break;
    case EventKind::View:
      std::construct_at(&view);
      break;
    case EventKind::Copy:
      std::construct_at(&copy);
      break;
    case EventKind::Op:
      std::construct_at(&op);
      break;
    case EventKind::ScopeBegin:
    case EventKind::ScopeEnd:
      std::construct_at(&scope);
      break;
    case EventKind::Step:
      std::construct_at(&step);
      break;
    case EventKind::Category:
      std::construct_at(&category);
      break;
  }
}

std::uint32_t* Event::site_field() {
  switch (kind) {
    case EventKind::Alloc:
      return &alloc.site;
    case EventKind::AllocFailed:
    case EventKind::Oom:
      return &failure.site;
    case EventKind::AllocRetry:
      return &retry.site;
    case EventKind::View:
      return &view.site;
    case EventKind::Copy:
      return &copy.site;
    case EventKind::Op:
      return &op.site;
    default:
      return nullptr;
  }
}

std::uint32_t* Event::stack_field() {
  switch (kind) {
    case EventKind::Alloc:
      return &alloc.stack;
    case EventKind::AllocFailed:
    case EventKind::Oom:
      return &failure.stack;
    default:
      return nullptr;
  }
}

std::uint32_t* Event::name_field() {
  switch (kind) {
    case EventKind::Op:
      return &op.name;
    case EventKind::ScopeBegin:
    case EventKind::ScopeEnd:
      return &scope.name;
    default:
      return nullptr;
  }
}

std::uint32_t Event::site() const {
  const std::uint32_t* f = const_cast<Event*>(this)->site_field();
  return f ? *f : 0;
}

std::uint32_t Event::stack() const {
  const std::uint32_t* f = const_cast<Event*>(this)->stack_field();
  return f ? *f : 0;
}

std::uint32_t Event::name() const {
  const std::uint32_t* f = const_cast<Event*>(this)->name_field();
  return f ? *f : 0;
}

bool Event::operator==(const Event& o) const {
  if (kind != o.kind || device != o.device || thread != o.thread || time_ns != o.time_ns) return false;
  switch (kind) {
    case EventKind::SegmentAlloc:
    case EventKind::SegmentFree:
      return segment == o.segment;
    case EventKind::Alloc:
      return alloc == o.alloc;
    case EventKind::FreeRequested:
    case EventKind::FreeCompleted:
      return free == o.free;
    case EventKind::AllocFailed:
    case EventKind::Oom:
      return failure == o.failure;
    case EventKind::AllocRetry:
      return retry == o.retry;
    case EventKind::View:
      return view == o.view;
    case EventKind::Copy:
      return copy == o.copy;
    case EventKind::Op:
      return op == o.op;
    case EventKind::ScopeBegin:
    case EventKind::ScopeEnd:
      return scope == o.scope;
    case EventKind::Step:
      return step == o.step;
    case EventKind::Category:
      return category == o.category;
  }
  return false;
}

}  // namespace memlens::profiler
