#pragma once
// Hand-built traces for analysis tests: events written through the real TraceWriter,
// read back through the real TraceReader, with times and sites chosen by the test.
#include <unistd.h>

#include <memlens/trace/trace_reader.hpp>
#include <memlens/trace/trace_writer.hpp>
#include <string>

namespace memlens::test {

using namespace memlens::profiler;

class TraceBuilder {
 public:
  static constexpr std::uint8_t kCpu = 0, kSim = 1;

  // `pid`: the header's (a follower asks whether that process still runs).
  explicit TraceBuilder(const std::string& name, std::size_t events_per_chunk = 4096, std::int64_t pid = 7)
      : path_("/tmp/memlens-test-" + std::to_string(::getpid()) + "-" + name + ".memtrace"),
        writer_(path_, header(pid), events_per_chunk) {}
  ~TraceBuilder() { std::remove(path_.c_str()); }

  std::uint32_t site(int line, const char* file = "model.cpp") { return writer_.intern_site(file, line, "train"); }

  // Writes a `k` event with these fields, the next time and `device`.
  template <class Fields>
  void add(EventKind k, const Fields& fields, std::uint8_t device = kSim) {
    Event e(k, fields);
    e.time_ns = time_ += 1000;
    e.device = device;
    writer_.write(e);
  }

  void segment(std::uint64_t address, std::uint64_t size, std::uint8_t device = kSim) {
    add(EventKind::SegmentAlloc, SegmentEvent{.address = address, .size = size}, device);
  }
  void segment_free(std::uint64_t address, std::uint64_t size) {
    add(EventKind::SegmentFree, SegmentEvent{.address = address, .size = size});
  }
  void alloc(std::uint64_t address, std::uint64_t size, std::uint32_t site, std::uint64_t storage = 0,
             std::uint8_t device = kSim) {
    add(EventKind::Alloc,
        AllocEvent{.address = address, .size = size, .requested = size, .storage = storage ? storage : address, .site = site},
        device);
  }
  void free(std::uint64_t address, std::uint64_t size, std::uint8_t device = kSim) {
    add(EventKind::FreeRequested, FreeEvent{.address = address, .size = size}, device);
  }
  void category(std::uint64_t storage, Category c) { add(EventKind::Category, CategoryEvent{.storage = storage, .category = c}); }
  void step() { add(EventKind::Step, StepEvent{++steps_}, 0); }
  void op(const char* name, std::initializer_list<std::initializer_list<std::int64_t>> inputs,
          std::initializer_list<std::int64_t> output, std::uint64_t bytes, std::uint32_t site, bool broadcast) {
    OpEvent o;
    o.name = writer_.intern_string(name), o.site = site, o.bytes = bytes, o.broadcast = broadcast;
    auto tensor = [](std::initializer_list<std::int64_t> dims) {
      ShapeRecord sizes;
      for (auto d : dims) sizes.dims[sizes.ndim++] = d;
      return TensorRecord::contiguous(sizes, memlens::ScalarType::Float32, kSim);
    };
    for (auto in : inputs) o.inputs[o.n_inputs++] = tensor(in);
    o.output = tensor(output);
    add(EventKind::Op, o);
  }
  void view(std::uint64_t storage, ViewKind kind, std::uint32_t site) {
    ViewEvent v;
    v.storage = storage, v.tensor = ++tensors_, v.view = kind, v.site = site;
    add(EventKind::View, v);
  }
  void copy(std::uint8_t from, std::uint64_t from_address, std::uint8_t to, std::uint64_t to_address, std::uint64_t bytes,
            CopyReason reason, std::uint32_t site) {
    add(EventKind::Copy,
        CopyEvent{.dst_address = to_address,
                  .src_address = from_address,
                  .bytes = bytes,
                  .src_device = from,
                  .reason = reason,
                  .site = site},
        to);
  }
  void oom(std::uint64_t requested, std::uint64_t free_bytes, std::uint64_t reserved, std::uint64_t allocated,
           std::uint32_t site) {
    add(EventKind::Oom, FailureEvent{.size = requested,
                                     .requested = requested,
                                     .device_free = free_bytes,
                                     .reserved = reserved,
                                     .allocated = allocated,
                                     .site = site});
  }

  // Closes the file and reads it back.
  TraceReader read() {
    writer_.close();
    return TraceReader(path_);
  }
  const std::string& path() const { return path_; }
  TraceWriter& writer() { return writer_; }

 private:
  static TraceHeader header(std::int64_t pid) {
    TraceHeader h;
    h.program = "hand-built";
    h.pid = pid;
    h.devices = {{"cpu", 0}, {"sim:0", std::uint64_t{1} << 30}};
    return h;
  }
  std::string path_;
  TraceWriter writer_;
  std::uint64_t time_ = 1'000'000, steps_ = 0, tensors_ = 0;
};

}  // namespace memlens::test
