#include "ring_records.hpp"

namespace memlens::profiler::ring_records {

namespace {

const std::uint64_t* get_dims(const std::uint64_t* w, ShapeRecord& r) {
  r.ndim = static_cast<std::uint8_t>(*w++);
  for (std::size_t i = 0; i < r.ndim; ++i) r.dims[i] = static_cast<std::int64_t>(*w++);
  return w;
}

}  // namespace

Pointers decode(const std::uint64_t* w, const RecordHeader& h, Event& e) {
  Pointers d;
  e.reset(static_cast<EventKind>(h.kind));
  e.device = h.device;
  e.time_ns = w[1];
  auto stream = [](std::uint64_t v) { return static_cast<std::int32_t>(static_cast<std::int64_t>(v)); };
  auto pool = [&] { return h.sub ? Pool::Large : Pool::Small; };
  switch (e.kind) {
    case EventKind::SegmentAlloc: case EventKind::SegmentFree:
      e.segment = {.address = w[2], .size = w[3], .stream = stream(w[8]), .pool = pool()};
      break;
    case EventKind::Alloc:
      e.alloc = {.address = w[2], .segment = w[5], .size = w[3], .requested = w[4], .storage = w[6], .stream = stream(w[8])};
      d.site = reinterpret_cast<const void*>(w[7]);
      d.frames = w + kAllocatorWords, d.depth = h.extra;
      break;
    case EventKind::FreeRequested: case EventKind::FreeCompleted:
      e.free = {.address = w[2], .size = w[3], .storage = w[6], .stream = stream(w[8])};
      break;
    case EventKind::AllocFailed: case EventKind::Oom:
      e.failure = {.size = w[3], .requested = w[4], .device_free = w[9], .reserved = w[10], .allocated = w[11],
                   .largest_free_block = w[12], .stream = stream(w[8])};
      d.site = reinterpret_cast<const void*>(w[7]);
      d.frames = w + kFailureWords, d.depth = h.extra;
      break;
    case EventKind::AllocRetry:
      e.retry = {.size = w[3], .requested = w[4], .stream = stream(w[8]), .pool = pool()};
      d.site = reinterpret_cast<const void*>(w[7]);
      break;
    case EventKind::View: {
      e.view.tensor = w[2], e.view.storage = w[3], e.view.offset = static_cast<std::int64_t>(w[4]);
      e.view.view = static_cast<ViewKind>(h.sub), e.view.dtype = static_cast<ScalarType>(h.flags);
      d.site = reinterpret_cast<const void*>(w[5]);
      e.view.sizes.ndim = e.view.strides.ndim = static_cast<std::uint8_t>(h.extra);
      for (std::size_t i = 0; i < h.extra; ++i) {
        e.view.sizes.dims[i] = static_cast<std::int64_t>(w[6 + i]);
        e.view.strides.dims[i] = static_cast<std::int64_t>(w[6 + h.extra + i]);
      }
      break;
    }
    case EventKind::Copy:
      e.copy = {.dst_address = w[2], .src_address = w[3], .bytes = w[4], .src_device = static_cast<std::uint8_t>(h.extra),
                .reason = static_cast<CopyReason>(h.sub)};
      d.site = reinterpret_cast<const void*>(w[5]);
      break;
    case EventKind::Op: {
      e.op.duration_ns = w[1] - std::min(w[1], w[2]);  // in ticks until the writer converts it
      d.name = reinterpret_cast<const char*>(w[3]);
      e.op.bytes = w[4];
      d.site = reinterpret_cast<const void*>(w[5]);
      e.op.broadcast = h.flags != 0;
      e.op.n_inputs = static_cast<std::uint8_t>(h.extra);
      const std::uint64_t* p = get_dims(w + 6, e.op.output);
      for (std::size_t i = 0; i < e.op.n_inputs; ++i) p = get_dims(p, e.op.inputs[i]);
      break;
    }
    case EventKind::Category:
      e.category = {.storage = w[2], .category = static_cast<Category>(h.sub)};
      break;
    case EventKind::ScopeBegin: case EventKind::ScopeEnd: case EventKind::Step:
      d.name = reinterpret_cast<const char*>(w[2]);
      if (e.kind == EventKind::Step) e.step.number = w[3];
      break;
  }
  return d;
}

}  // namespace memlens::profiler::ring_records
