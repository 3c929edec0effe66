#include "activity_translation.hpp"

namespace memlens::cupti {

using profiler::CopyReason;
using profiler::Event;
using profiler::EventKind;

namespace {

constexpr std::uint8_t kCpu = 0;

// Where a memcpy's side lives: host memory (pageable, pinned) or a device.
std::uint8_t side(std::uint8_t memory_kind, std::uint32_t cuda_device) {
  switch (memory_kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE:
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
      return kCpu;
    default:
      return device_index(cuda_device);
  }
}

}  // namespace

std::vector<profiler::DeviceInfo> trace_devices() {
  std::vector<profiler::DeviceInfo> d{{"cpu", 0}, {"sim:0", 0}};
  for (int i = 0; i < 16; ++i) d.push_back({"cuda:" + std::to_string(i), 0});
  return d;
}

std::uint8_t device_index(std::uint32_t cuda_device) {
  return static_cast<std::uint8_t>(2 + (cuda_device < 16 ? cuda_device : 15));
}

void translate(const CUpti_Activity* record, const TranslatedNames& names, std::vector<Event>& out) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_MEMORY2: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemory4*>(record);
      bool alloc = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
      if (!alloc && m->memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) return;
      Event e;
      e.time_ns = m->timestamp;
      e.device = m->memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED || m->memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE
                     ? kCpu
                     : device_index(m->deviceId);
      auto stream = static_cast<std::int32_t>(m->streamId);
      bool pooled = m->memoryPoolConfig.memoryPoolType != CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID;
      if (pooled && alloc) {  // cudaMallocAsync: a block of its pool
        e.reset(EventKind::Alloc);
        e.alloc = {.address = m->address,
                   .segment = m->memoryPoolConfig.address,
                   .size = m->bytes,
                   .requested = m->bytes,
                   .stream = stream};
      } else if (pooled) {
        e.reset(EventKind::FreeRequested);
        e.free = {.address = m->address, .size = m->bytes, .stream = stream};
      } else {  // cudaMalloc / cudaFree: a segment, in the large pool (a segment of its own)
        e.reset(alloc ? EventKind::SegmentAlloc : EventKind::SegmentFree);
        e.segment = {.address = m->address, .size = m->bytes, .stream = stream, .pool = Pool::Large};
      }
      out.push_back(e);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMORY_POOL: {
      const auto* p = reinterpret_cast<const CUpti_ActivityMemoryPool3*>(record);
      Event e;
      e.time_ns = p->timestamp;
      e.device = device_index(p->deviceId);
      if (p->memoryPoolOperationType == CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED) e.reset(EventKind::SegmentAlloc);
      else if (p->memoryPoolOperationType == CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED) e.reset(EventKind::SegmentFree);
      else return;  // trimmed: the pool keeps its address range
      e.segment = {.address = p->address, .size = p->size, .stream = 0, .pool = Pool::Large};
      out.push_back(e);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* c = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      Event e(EventKind::Copy, profiler::CopyEvent{});
      e.time_ns = c->start;
      e.device = side(c->dstKind, c->deviceId);
      e.copy.src_device = side(c->srcKind, c->deviceId);
      e.copy.bytes = c->bytes;
      // Between host and device it is a transfer; on one device, a plain copy.
      e.copy.reason = e.device != e.copy.src_device ? CopyReason::ToDevice : CopyReason::Copy;
      out.push_back(e);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* s = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      Event e(EventKind::Op, profiler::OpEvent{});
      e.time_ns = s->start;
      e.op.duration_ns = s->end > s->start ? s->end - s->start : 0;
      e.device = device_index(s->deviceId);
      e.op.name = names.memset;
      e.op.bytes = s->bytes;
      // The bytes it set, as one uint8 tensor.
      e.op.output = profiler::TensorRecord::contiguous({.ndim = 1, .dims = {static_cast<std::int64_t>(s->bytes)}},
                                                       ScalarType::UInt8, e.device);
      out.push_back(e);
      return;
    }
    default:
      return;
  }
}

}  // namespace memlens::cupti
