#pragma once
// Hand-built traces for analysis tests: events written through the real TraceWriter,
// read back through the real TraceReader, with times and sites chosen by the test.
#include <unistd.h>

#include <memlens/profiler/trace_reader.hpp>
#include <memlens/profiler/trace_writer.hpp>
#include <string>

namespace memlens::test {

using namespace memlens::profiler;

class TraceBuilder {
 public:
  static constexpr std::uint8_t kCpu = 0, kSim = 1;

  explicit TraceBuilder(const std::string& name)
      : path_("/tmp/memlens-test-" + std::to_string(::getpid()) + "-" + name + ".memtrace"),
        writer_(path_, header()) {}
  ~TraceBuilder() { std::remove(path_.c_str()); }

  std::uint32_t site(int line, const char* file = "model.cpp") { return writer_.intern_site(file, line, "train"); }

  Event& add(EventKind k, std::uint8_t device = kSim) {
    Event e;
    e.kind = k;
    e.time_ns = time_ += 1000;
    e.device = device;
    last_ = e;
    return last_;
  }
  void commit() { writer_.write(last_); }

  void segment(std::uint64_t address, std::uint64_t size, std::uint8_t device = kSim) {
    Event& e = add(EventKind::SegmentAlloc, device);
    e.address = address, e.size = size;
    commit();
  }
  void segment_free(std::uint64_t address, std::uint64_t size) {
    Event& e = add(EventKind::SegmentFree);
    e.address = address, e.size = size;
    commit();
  }
  void alloc(std::uint64_t address, std::uint64_t size, std::uint32_t site, std::uint64_t storage = 0,
             std::uint8_t device = kSim) {
    Event& e = add(EventKind::Alloc, device);
    e.address = address, e.size = size, e.requested = size, e.site = site, e.storage = storage ? storage : address;
    commit();
  }
  void free(std::uint64_t address, std::uint64_t size, std::uint8_t device = kSim) {
    Event& e = add(EventKind::FreeRequested, device);
    e.address = address, e.size = size;
    commit();
  }
  void category(std::uint64_t storage, Category c) {
    Event& e = add(EventKind::Category);
    e.storage = storage, e.sub = static_cast<std::uint8_t>(c);
    commit();
  }
  void step() {
    Event& e = add(EventKind::Step, 0);
    e.step = ++steps_;
    commit();
  }
  void op(const char* name, std::initializer_list<std::initializer_list<std::int64_t>> inputs,
          std::initializer_list<std::int64_t> output, std::uint64_t bytes, std::uint32_t site, bool broadcast) {
    Event& e = add(EventKind::Op);
    e.name = writer_.intern_string(name);
    for (auto in : inputs) {
      ShapeRecord& r = e.inputs[e.n_inputs++];
      for (auto d : in) r.dims[r.ndim++] = d;
    }
    for (auto d : output) e.shape.dims[e.shape.ndim++] = d;
    e.size = bytes, e.site = site, e.broadcast = broadcast;
    commit();
  }
  void view(std::uint64_t storage, ViewKind kind, std::uint32_t site) {
    Event& e = add(EventKind::View);
    e.storage = storage, e.tensor = ++tensors_, e.sub = static_cast<std::uint8_t>(kind), e.site = site;
    commit();
  }
  void copy(std::uint8_t from, std::uint64_t from_address, std::uint8_t to, std::uint64_t to_address, std::uint64_t bytes,
            CopyReason reason, std::uint32_t site) {
    Event& e = add(EventKind::Copy, to);
    e.device2 = from, e.address2 = from_address, e.address = to_address, e.size = bytes;
    e.sub = static_cast<std::uint8_t>(reason), e.site = site;
    commit();
  }
  void oom(std::uint64_t requested, std::uint64_t free_bytes, std::uint64_t reserved, std::uint64_t allocated,
           std::uint32_t site) {
    Event& e = add(EventKind::Oom);
    e.size = requested, e.free_bytes = free_bytes, e.reserved = reserved, e.allocated = allocated, e.site = site;
    commit();
  }

  // Closes the file and reads it back.
  TraceReader read() {
    writer_.close();
    return TraceReader(path_);
  }
  const std::string& path() const { return path_; }
  TraceWriter& writer() { return writer_; }

 private:
  static TraceHeader header() {
    TraceHeader h;
    h.program = "hand-built";
    h.pid = 7;
    h.devices = {{"cpu", 0}, {"sim:0", std::uint64_t{1} << 30}};
    return h;
  }
  std::string path_;
  TraceWriter writer_;
  Event last_;
  std::uint64_t time_ = 1'000'000, steps_ = 0, tensors_ = 0;
};

}  // namespace memlens::test
