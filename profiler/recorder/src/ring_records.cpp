#include "ring_records.hpp"

namespace memlens::profiler::ring_records {

namespace {

const std::uint64_t* get_tensor(const std::uint64_t* w, TensorRecord& t) {
  const std::uint64_t head = *w++;
  t.sizes.ndim = t.strides.ndim = static_cast<std::uint8_t>(head & 0xff);
  t.dtype = static_cast<ScalarType>(head >> 8 & 0xff);
  t.device = static_cast<std::uint8_t>(head >> 16 & 0xff);
  t.storage = *w++, t.offset = static_cast<std::int64_t>(*w++);
  for (std::size_t i = 0; i < t.sizes.ndim; ++i) t.sizes.dims[i] = static_cast<std::int64_t>(*w++);
  for (std::size_t i = 0; i < t.sizes.ndim; ++i) t.strides.dims[i] = static_cast<std::int64_t>(*w++);
  return w;
}

}  // namespace

Pointers decode(const std::uint64_t* w, const RecordHeader& h, Event& e) {
  Pointers d;
  e.reset(static_cast<EventKind>(h.kind));
  e.device = h.device;
  e.time_ns = w[kStampWord];
  auto stream = [](std::uint64_t v) { return static_cast<std::int32_t>(static_cast<std::int64_t>(v)); };
  auto pool = [&] { return h.sub ? Pool::Large : Pool::Small; };
  switch (e.kind) {
    case EventKind::SegmentAlloc:
    case EventKind::SegmentFree:
      e.segment = {.address = w[kAddress], .size = w[kSize], .stream = stream(w[kStream]), .pool = pool()};
      break;
    case EventKind::Alloc:
      e.alloc = {.address = w[kAddress],
                 .segment = w[kSegment],
                 .size = w[kSize],
                 .requested = w[kRequested],
                 .storage = w[kStorage],
                 .stream = stream(w[kStream])};
      d.site = reinterpret_cast<const void*>(w[kAllocSite]);
      d.frames = w + kAllocatorWords, d.depth = h.extra;
      break;
    case EventKind::FreeRequested:
    case EventKind::FreeCompleted:
      e.free = {.address = w[kAddress], .size = w[kSize], .storage = w[kStorage], .stream = stream(w[kStream])};
      break;
    case EventKind::AllocFailed:
    case EventKind::Oom:
      e.failure = {.size = w[kSize],
                   .requested = w[kRequested],
                   .device_free = w[kDeviceFree],
                   .reserved = w[kReserved],
                   .allocated = w[kAllocated],
                   .largest_free_block = w[kLargestFree],
                   .stream = stream(w[kStream])};
      d.site = reinterpret_cast<const void*>(w[kAllocSite]);
      d.frames = w + kFailureWords, d.depth = h.extra;
      break;
    case EventKind::AllocRetry:
      e.retry = {.size = w[kSize], .requested = w[kRequested], .stream = stream(w[kStream]), .pool = pool()};
      d.site = reinterpret_cast<const void*>(w[kAllocSite]);
      break;
    case EventKind::View: {
      e.view.tensor = w[kTensor], e.view.storage = w[kViewStorage], e.view.offset = static_cast<std::int64_t>(w[kOffset]);
      e.view.view = static_cast<ViewKind>(h.sub), e.view.dtype = static_cast<ScalarType>(h.flags);
      d.site = reinterpret_cast<const void*>(w[kViewSite]);
      e.view.sizes.ndim = e.view.strides.ndim = static_cast<std::uint8_t>(h.extra);
      for (std::size_t i = 0; i < h.extra; ++i) {
        e.view.sizes.dims[i] = static_cast<std::int64_t>(w[kViewDims + i]);
        e.view.strides.dims[i] = static_cast<std::int64_t>(w[kViewDims + h.extra + i]);
      }
      break;
    }
    case EventKind::Copy:
      e.copy = {.dst_address = w[kDst],
                .src_address = w[kSrc],
                .bytes = w[kBytes],
                .src_device = static_cast<std::uint8_t>(h.extra),
                .reason = static_cast<CopyReason>(h.sub)};
      d.site = reinterpret_cast<const void*>(w[kCopySite]);
      break;
    case EventKind::Op: {
      e.op.duration_ns = w[kStampWord] - std::min(w[kStampWord], w[kOpStart]);  // in ticks until the writer converts it
      d.name = reinterpret_cast<const char*>(w[kOpName]);
      e.op.bytes = w[kOpBytes];
      d.site = reinterpret_cast<const void*>(w[kOpSite]);
      e.op.broadcast = h.flags != 0;
      e.op.n_inputs = static_cast<std::uint8_t>(h.extra);
      const std::uint64_t* p = get_tensor(w + kOpTensors, e.op.output);
      for (std::size_t i = 0; i < e.op.n_inputs; ++i) p = get_tensor(p, e.op.inputs[i]);
      break;
    }
    case EventKind::Category:
      e.category = {.storage = w[kCategoryStorage], .category = static_cast<Category>(h.sub)};
      break;
    case EventKind::ScopeBegin:
    case EventKind::ScopeEnd:
    case EventKind::Step:
      d.name = reinterpret_cast<const char*>(w[kMarkName]);
      if (e.kind == EventKind::Step) e.step.number = w[kStepNumber];
      break;
  }
  return d;
}

}  // namespace memlens::profiler::ring_records
