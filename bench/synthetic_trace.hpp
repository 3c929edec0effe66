#pragma once
// A synthetic trace of a training loop for the benchmarks (bench_report, bench_follow),
// written by the real TraceWriter.
#include <cstdint>
#include <memlens/trace/trace_writer.hpp>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace memlens::bench {

using namespace memlens::profiler;

// `events` events of a model's steps: activations kept for backward, temporaries freed at
// once, a view and a copy now and then. `flush_every`: hands the file what it has every so
// many events (a recording's periodic flush), for a reader that follows it.
inline void write_trace(const std::string& path, std::uint64_t events, std::uint64_t flush_every = 0) {
  TraceHeader h;
  h.program = "bench_report synthetic";
  h.devices = {{"cpu", 0}, {"sim:0", std::uint64_t{16} << 30}};
  TraceWriter w(path, h, 4096);
  std::uint32_t sites[16];
  for (int i = 0; i < 16; ++i) sites[i] = w.intern_site("model.cpp", static_cast<std::uint32_t>(10 + i), "forward");
  std::uint32_t name = w.intern_string("add");
  std::mt19937_64 rng(1);
  std::uint64_t t = 1000, written = 0, storage = 1, step = 0, flushed = 0;
  const std::uint64_t base = 0x7f0000000000, seg = std::uint64_t{1} << 30;
  auto put = [&](EventKind k, const auto& fields) {
    Event e(k, fields);
    e.time_ns = t += 50 + rng() % 100;
    e.device = 1;
    w.write(e);
    ++written;
  };
  put(EventKind::SegmentAlloc, SegmentEvent{.address = base, .size = seg});
  std::vector<std::pair<std::uint64_t, std::uint64_t>> kept;
  ShapeRecord shape;
  shape.ndim = 2, shape.dims[0] = 128, shape.dims[1] = 256;
  ShapeRecord transposed = shape;
  std::swap(transposed.dims[0], transposed.dims[1]);
  while (written < events) {
    // forward: 8 layers, each an op with its output kept and a temporary
    for (int l = 0; l < 8 && written < events; ++l) {
      std::uint64_t size = 512 * (1 + rng() % 512);
      std::uint64_t at = base + (kept.size() * 4 + 1) * (std::uint64_t{1} << 20);
      put(EventKind::Alloc,
          AllocEvent{.address = at, .segment = base, .size = size, .requested = size, .storage = storage++, .site = sites[l]});
      kept.emplace_back(at, size);
      OpEvent op{.name = name,
                 .site = sites[l],
                 .bytes = size,
                 .n_inputs = 2,
                 .output = TensorRecord::contiguous(shape, memlens::ScalarType::Float32, 1)};
      op.inputs[0] = op.inputs[1] = op.output;
      put(EventKind::Op, op);
      put(EventKind::Alloc, AllocEvent{.address = at + size,
                                       .segment = base,
                                       .size = 4096,
                                       .requested = 4096,
                                       .storage = storage++,
                                       .site = sites[8 + l % 4]});
      put(EventKind::FreeRequested, FreeEvent{.address = at + size, .size = 4096, .storage = storage - 1});
      ViewEvent view{.tensor = storage, .storage = storage - 2, .view = ViewKind::Transpose, .sizes = transposed, .strides = {}};
      put(EventKind::View, view);
      if (l == 0)
        put(EventKind::Copy, CopyEvent{.dst_address = at,
                                       .src_address = 0x5000,
                                       .bytes = size,
                                       .src_device = 0,
                                       .reason = CopyReason::ToDevice,
                                       .site = sites[15]});
    }
    // backward: free what forward kept
    for (auto [at, size] : kept) put(EventKind::FreeRequested, FreeEvent{.address = at, .size = size});
    kept.clear();
    put(EventKind::Step, StepEvent{++step});
    if (flush_every && written - flushed >= flush_every) w.flush(), flushed = written;
  }
  w.close();
}

}  // namespace memlens::bench
