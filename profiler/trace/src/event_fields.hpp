#pragma once
// The fields of each kind's struct (memlens/trace/event.hpp), in file order: the one
// list that the encoder, the decoder, the JSON export and the docs' field names all walk,
// so none can drift from another. An IO has, each taking the field's name and a
// reference: u (unsigned varint), s (signed, zigzag), small (a narrow unsigned integer),
// enumeration (an enum and its count), flag, address (a zigzag delta from the chunk's
// previous address), storage (the same, from its previous storage id), shape, tensor (an
// op's tensor: sizes, strides, dtype, device); and, taking just the reference, site, stack
// and name (interned ids) and device (a device index, with its name).
#include <type_traits>

#include "memlens/trace/event.hpp"
#include "memlens/trace/trace_format.hpp"

namespace memlens::profiler::event_fields {

template <class IO>
void fields(IO& io, SegmentEvent& f) {
  io.address("address", f.address), io.u("size", f.size), io.small("stream", f.stream);
  io.enumeration("pool", f.pool, kPoolCount);
}
template <class IO>
void fields(IO& io, AllocEvent& f) {
  io.address("address", f.address), io.address("segment", f.segment), io.u("size", f.size);
  io.u("requested", f.requested), io.small("stream", f.stream), io.storage("storage", f.storage);
  io.enumeration("category", f.category, kCategoryCount), io.site(f.site), io.stack(f.stack);
}
template <class IO>
void fields(IO& io, FreeEvent& f) {
  io.address("address", f.address), io.u("size", f.size), io.small("stream", f.stream), io.storage("storage", f.storage);
}
template <class IO>
void fields(IO& io, FailureEvent& f) {
  io.u("size", f.size), io.u("requested", f.requested), io.u("device_free", f.device_free);
  io.u("reserved", f.reserved), io.u("allocated", f.allocated), io.u("largest_free_block", f.largest_free_block);
  io.small("stream", f.stream), io.site(f.site), io.stack(f.stack);
}
template <class IO>
void fields(IO& io, RetryEvent& f) {
  io.u("size", f.size), io.u("requested", f.requested), io.small("stream", f.stream);
  io.enumeration("pool", f.pool, kPoolCount), io.site(f.site);
}
template <class IO>
void fields(IO& io, ViewEvent& f) {
  io.u("tensor", f.tensor), io.storage("storage", f.storage), io.enumeration("view", f.view, kViewKindCount);
  io.shape("sizes", f.sizes), io.shape("strides", f.strides), io.s("offset", f.offset), io.site(f.site);
  io.enumeration("dtype", f.dtype, kScalarTypeCount);
}
template <class IO>
void fields(IO& io, CopyEvent& f) {
  io.device("src_device", f.src_device), io.address("dst_address", f.dst_address);
  io.address("src_address", f.src_address), io.u("bytes", f.bytes);
  io.enumeration("reason", f.reason, kCopyReasonCount), io.site(f.site);
}
template <class IO>
void fields(IO& io, OpEvent& f) {
  io.name(f.name), io.small("n_inputs", f.n_inputs);
  if (f.n_inputs > OpEvent::kMaxInputs) throw TraceError("op with more than 4 recorded inputs");
  if constexpr (IO::kNamesOnly) io.tensor("inputs", f.inputs[0]);
  else
    for (std::size_t i = 0; i < f.n_inputs; ++i) io.tensor("input", f.inputs[i]);
  io.tensor("output", f.output), io.u("bytes", f.bytes), io.flag("broadcast", f.broadcast);
  io.site(f.site), io.u("duration_ns", f.duration_ns);
}
template <class IO>
void fields(IO& io, ScopeEvent& f) {
  io.name(f.name);
}
template <class IO>
void fields(IO& io, StepEvent& f) {
  io.u("number", f.number);
}
template <class IO>
void fields(IO& io, CategoryEvent& f) {
  io.storage("storage", f.storage), io.enumeration("category", f.category, kCategoryCount);
}

template <class IO>
void fields(IO& io, Event& e) {
  using K = EventKind;
  switch (e.kind) {
    case K::SegmentAlloc:
    case K::SegmentFree:
      fields(io, e.segment);
      break;
    case K::Alloc:
      fields(io, e.alloc);
      break;
    case K::FreeRequested:
    case K::FreeCompleted:
      fields(io, e.free);
      break;
    case K::AllocFailed:
    case K::Oom:
      fields(io, e.failure);
      break;
    case K::AllocRetry:
      fields(io, e.retry);
      break;
    case K::View:
      fields(io, e.view);
      break;
    case K::Copy:
      fields(io, e.copy);
      break;
    case K::Op:
      fields(io, e.op);
      break;
    case K::ScopeBegin:
    case K::ScopeEnd:
      fields(io, e.scope);
      break;
    case K::Step:
      fields(io, e.step);
      break;
    case K::Category:
      fields(io, e.category);
      break;
  }
}

}  // namespace memlens::profiler::event_fields
