// The recorder's C ABI (record_abi.h) over one TraceWriter. A foreign program's events
// arrive already in order (Python's calls are serialised by the lock here, and the GIL
// before it), so they are written straight through, without the runtime recorder's
// per-thread rings; a flush at most every 100 ms keeps a killed program's trace readable.
#include "memlens/record_abi/record_abi.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "memlens/common/mapped_file.hpp"
#include "memlens/snapshot/allocator_trace_merge.hpp"
#include "memlens/trace/process_header.hpp"
#include "memlens/trace/trace_reader.hpp"
#include "memlens/trace/trace_writer.hpp"

namespace {

using namespace memlens::profiler;

constexpr int kAbiVersion = 4;
constexpr std::uint64_t kFlushIntervalNs = 100'000'000;

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

struct Recording {
  std::mutex mu;
  std::unique_ptr<TraceWriter> writer;
  std::string path;
  std::int64_t trace_minus_unix_ns = 0;  // the trace's clock less the wall clock, read at the open
  std::size_t devices = 0;
  std::uint64_t last_flush_ns = 0;
  bool failed = false;
  std::unordered_map<std::thread::id, std::uint32_t> threads;
  std::vector<std::uint64_t> live_bytes;  // per device: the storages' bytes alive, for an OOM's state
};

Recording& recording() {
  static Recording* r = new Recording;  // never destroyed: calls may come during interpreter teardown
  return *r;
}

thread_local std::string last_error;

int fail(const std::string& what) {
  last_error = what;
  return -1;
}

// Reads a shape (rank, then sizes) from `dims`; deeper than the trace keeps is cut.
const std::int64_t* read_shape(const std::int64_t* dims, ShapeRecord& out) {
  const std::int64_t rank = *dims++;
  out.ndim = static_cast<std::uint8_t>(rank < 0 ? 0 : rank > ShapeRecord::kMaxDims ? ShapeRecord::kMaxDims : rank);
  for (std::int64_t i = 0; i < rank; ++i)
    if (i < ShapeRecord::kMaxDims) out.dims[static_cast<std::size_t>(i)] = dims[i];
  return dims + (rank < 0 ? 0 : rank);
}

// Reads an op's tensor (rank, dtype, device, storage, offset, sizes, strides) from
// `values`; a dtype the trace does not know clears `valid`.
const std::int64_t* read_tensor(const std::int64_t* values, TensorRecord& out, bool& valid) {
  const std::int64_t rank = std::max<std::int64_t>(values[0], 0), dtype = values[1], device = values[2];
  valid = valid && dtype >= 0 && dtype < static_cast<std::int64_t>(memlens::kScalarTypeCount) && device >= 0 && device < 256;
  out.dtype = valid ? static_cast<memlens::ScalarType>(dtype) : memlens::ScalarType::Float32;
  out.device = static_cast<std::uint8_t>(device);
  out.storage = static_cast<std::uint64_t>(values[3]), out.offset = values[4];
  out.sizes.ndim = out.strides.ndim = static_cast<std::uint8_t>(std::min<std::int64_t>(rank, ShapeRecord::kMaxDims));
  for (std::size_t i = 0; i < out.sizes.ndim; ++i) {
    out.sizes.dims[i] = values[5 + i];
    out.strides.dims[i] = values[5 + rank + static_cast<std::int64_t>(i)];
  }
  return values + 5 + 2 * rank;
}

// Runs `fill` on an event of the head filled in and writes it, under the lock; a write
// that fails ends the trace there (the message is kept for close to report).
template <class Fields>
void emit(EventKind kind, std::uint8_t device, const Fields& fields, std::uint64_t time_ns = 0) {
  Recording& r = recording();
  std::lock_guard l(r.mu);
  if (!r.writer || r.failed || device >= r.devices) return;
  Event e(kind, fields);
  e.device = device;
  e.time_ns = time_ns ? time_ns : now_ns();
  auto [it, fresh] = r.threads.try_emplace(std::this_thread::get_id(), static_cast<std::uint32_t>(r.threads.size()));
  e.thread = it->second;
  try {
    r.writer->write(e);
    if (e.time_ns - r.last_flush_ns > kFlushIntervalNs) {
      r.writer->flush();
      r.last_flush_ns = e.time_ns;
    }
  } catch (const std::exception& ex) {
    // Said once, as the runtime's recorder says it; the program runs on unrecorded.
    std::fprintf(stderr, "memlens: recording stopped: %s\n", ex.what());
    last_error = ex.what();
    r.failed = true;
  }
}

void add_live_bytes(std::uint8_t device, std::uint64_t bytes, bool born) {
  Recording& r = recording();
  std::lock_guard l(r.mu);
  if (device >= r.live_bytes.size()) return;
  std::uint64_t& live = r.live_bytes[device];
  live = born ? live + bytes : live - std::min(live, bytes);
}

std::uint64_t live_bytes(std::uint8_t device) {
  Recording& r = recording();
  std::lock_guard l(r.mu);
  return device < r.live_bytes.size() ? r.live_bytes[device] : 0;
}

template <class Intern>
std::uint32_t intern(Intern intern_fn) {
  Recording& r = recording();
  std::lock_guard l(r.mu);
  if (!r.writer) return 0;
  return intern_fn(*r.writer);
}

}  // namespace

// The library is built with hidden visibility; only these are its interface.
#pragma GCC visibility push(default)
extern "C" {

int memlens_abi_version(void) { return kAbiVersion; }
const char* memlens_abi_error(void) { return last_error.c_str(); }

int memlens_abi_open(const char* path, const char* program, const char* devices, const char* notes) {
  Recording& r = recording();
  std::lock_guard l(r.mu);
  if (r.writer) return fail("a recording is already running");
  std::vector<DeviceInfo> list;
  std::string names = devices ? devices : "";
  for (std::size_t at = 0; at <= names.size();) {
    std::size_t end = names.find(',', at);
    if (end == std::string::npos) end = names.size();
    if (end > at) list.push_back({names.substr(at, end - at), 0});
    at = end + 1;
  }
  if (list.empty() || list.size() > 255) return fail("memlens_abi_open: give 1 to 255 device names");
  TraceHeader header = process_trace_header("steady_clock_ns", list, notes ? notes : "");
  if (program && *program) header.program = program;
  try {
    r.writer = std::make_unique<TraceWriter>(path, header);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  r.path = path;
  const auto unix_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  r.trace_minus_unix_ns = static_cast<std::int64_t>(now_ns()) - static_cast<std::int64_t>(unix_ns);
  r.devices = list.size();
  r.live_bytes.assign(list.size(), 0);
  r.failed = false;
  r.threads.clear();
  r.last_flush_ns = now_ns();
  return 0;
}

int memlens_abi_close(void) {
  Recording& r = recording();
  std::lock_guard l(r.mu);
  if (!r.writer) return 0;
  bool ok = !r.failed;
  try {
    r.writer->close();
  } catch (const std::exception& e) {
    if (ok) {
      std::fprintf(stderr, "memlens: recording stopped: %s\n", e.what());
      last_error = e.what();
    }
    ok = false;
  }
  r.writer.reset();
  return ok ? 0 : -1;
}

int memlens_abi_close_with_allocator_trace(const char* snapshot_path) {
  std::string path;
  std::int64_t offset = 0;
  {
    Recording& r = recording();
    std::lock_guard l(r.mu);
    path = r.path, offset = r.trace_minus_unix_ns;
  }
  if (memlens_abi_close() != 0) return -1;
  // Merged beside the trace, then put in its place: a merge that fails leaves the trace as recorded.
  const std::string merged = path + ".merging";
  try {
    const memlens::MappedFile snapshot(snapshot_path);
    const std::string_view bytes(snapshot.data(), snapshot.size());
    const TraceReader recorded(path);
    memlens::snapshot::merge_allocator_trace(recorded, bytes, memlens::snapshot::sniff_snapshot(bytes.substr(0, 64)), offset,
                                             merged);
  } catch (const std::exception& e) {
    std::remove(merged.c_str());
    fail(std::string("the CUDA caching allocator's trace was not merged: ") + e.what());
    return 1;
  }
  if (std::rename(merged.c_str(), path.c_str()) != 0) {
    std::remove(merged.c_str());
    fail("the CUDA caching allocator's trace was not merged: cannot replace " + path);
    return 1;
  }
  return 0;
}

uint32_t memlens_abi_string(const char* s) {
  return intern([&](TraceWriter& w) { return w.intern_string(s ? s : ""); });
}

uint32_t memlens_abi_site(const char* file, uint32_t line, const char* function) {
  return intern(
      [&](TraceWriter& w) { return w.intern_site(file ? file : "", line, function ? function : "", Language::Python); });
}

uint32_t memlens_abi_stack(const uint32_t* sites, int depth) {
  if (depth <= 0) return 0;
  std::vector<std::uint32_t> ids(sites, sites + depth);
  return intern([&](TraceWriter& w) { return w.intern_stack(ids); });
}

void memlens_abi_storage_alloc(uint8_t device, uint64_t address, uint64_t bytes, uint64_t storage, uint8_t category,
                               uint32_t site, uint32_t stack) {
  if (category >= memlens::kCategoryCount) category = 0;
  add_live_bytes(device, bytes, true);
  emit(EventKind::SegmentAlloc, device, SegmentEvent{.address = address, .size = bytes});
  emit(EventKind::Alloc, device,
       AllocEvent{.address = address,
                  .segment = address,
                  .size = bytes,
                  .requested = bytes,
                  .storage = storage,
                  .category = static_cast<Category>(category),
                  .site = site,
                  .stack = stack});
}

void memlens_abi_storage_free(uint8_t device, uint64_t address, uint64_t bytes, uint64_t storage) {
  const FreeEvent f{.address = address, .size = bytes, .storage = storage};
  add_live_bytes(device, bytes, false);
  emit(EventKind::FreeRequested, device, f);
  emit(EventKind::FreeCompleted, device, f);
  emit(EventKind::SegmentFree, device, SegmentEvent{.address = address, .size = bytes});
}

void memlens_abi_category(uint8_t device, uint64_t storage, uint8_t category) {
  if (category >= memlens::kCategoryCount) return;
  emit(EventKind::Category, device, CategoryEvent{.storage = storage, .category = static_cast<Category>(category)});
}

void memlens_abi_op(uint32_t name, uint32_t site, uint64_t start_ns, uint64_t output_bytes, int broadcast, int n_inputs,
                    const int64_t* tensors) {
  OpEvent op{};
  op.name = name;
  op.site = site;
  op.bytes = output_bytes;
  op.broadcast = broadcast != 0;
  const std::uint64_t end = now_ns();
  op.duration_ns = end > start_ns ? end - start_ns : 0;
  bool valid = true;
  tensors = read_tensor(tensors, op.output, valid);
  for (int i = 0; i < n_inputs; ++i) {
    TensorRecord ignored;
    tensors =
        read_tensor(tensors, i < static_cast<int>(OpEvent::kMaxInputs) ? op.inputs[static_cast<std::size_t>(i)] : ignored, valid);
  }
  if (!valid) return;
  op.n_inputs = static_cast<std::uint8_t>(n_inputs < 0 ? 0 : std::min<int>(n_inputs, OpEvent::kMaxInputs));
  // An op's event is stamped at its start, as the runtime's are.
  emit(EventKind::Op, op.output.device, op, start_ns ? start_ns : end);
}

void memlens_abi_view(uint8_t device, uint64_t tensor, uint64_t storage, int64_t offset, uint8_t view_kind, uint8_t dtype,
                      uint32_t site, const int64_t* dims) {
  if (view_kind >= memlens::kViewKindCount || dtype >= memlens::kScalarTypeCount) return;
  ViewEvent v{};
  v.tensor = tensor;
  v.storage = storage;
  v.offset = offset;
  v.view = static_cast<ViewKind>(view_kind);
  v.dtype = static_cast<memlens::ScalarType>(dtype);
  v.site = site;
  const std::int64_t rank = dims[0];
  read_shape(dims, v.sizes);
  v.strides.ndim = v.sizes.ndim;
  for (std::int64_t i = 0; i < rank && i < ShapeRecord::kMaxDims; ++i)
    v.strides.dims[static_cast<std::size_t>(i)] = dims[1 + rank + i];
  emit(EventKind::View, device, v);
}

void memlens_abi_copy(uint8_t dst_device, uint64_t dst_address, uint8_t src_device, uint64_t src_address, uint64_t bytes,
                      uint8_t reason, uint32_t site) {
  if (reason >= memlens::kCopyReasonCount) return;
  emit(EventKind::Copy, dst_device,
       CopyEvent{.dst_address = dst_address,
                 .src_address = src_address,
                 .bytes = bytes,
                 .src_device = src_device,
                 .reason = static_cast<CopyReason>(reason),
                 .site = site});
}

void memlens_abi_oom(uint8_t device, uint64_t requested, uint32_t site, uint32_t stack) {
  const std::uint64_t live = live_bytes(device);
  emit(
      EventKind::Oom, device,
      FailureEvent{.size = requested, .requested = requested, .reserved = live, .allocated = live, .site = site, .stack = stack});
}

void memlens_abi_step(uint64_t number) { emit(EventKind::Step, 0, StepEvent{.number = number}); }

void memlens_abi_scope(const char* name, int begin) {
  const std::uint32_t id = memlens_abi_string(name);
  emit(begin ? EventKind::ScopeBegin : EventKind::ScopeEnd, 0, ScopeEvent{.name = id});
}

uint64_t memlens_abi_now_ns(void) { return now_ns(); }

}  // extern "C"
#pragma GCC visibility pop
