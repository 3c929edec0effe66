#pragma once
// Streams: ordered queues of device work. Blocks of the caching allocator belong to the
// stream they were allocated on. On `sim` work runs synchronously on the host, so a
// stream's work is complete unless a test (or a simulated kernel) says it is in flight.
#include <cstdint>

namespace memlens {

using StreamId = int;
inline constexpr StreamId kDefaultStream = 0;

// The stream new tensors on this thread allocate on.
StreamId current_stream();
void set_current_stream(StreamId s);

class StreamGuard {
 public:
  explicit StreamGuard(StreamId s) : prev_(current_stream()) { set_current_stream(s); }
  ~StreamGuard() { set_current_stream(prev_); }
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  StreamId prev_;
};

// Where the allocator asks whether work recorded on a stream has finished (CUDA events on
// a GPU; SimStreams on sim).
class StreamEvents {
 public:
  virtual ~StreamEvents() = default;
  // A marker after all work submitted to `s` so far.
  virtual std::uint64_t record(StreamId s) = 0;
  virtual bool query(StreamId s, std::uint64_t marker) = 0;
};

// Simulated streams: `submit` puts work in flight, `synchronize` completes it.
class SimStreams final : public StreamEvents {
 public:
  static SimStreams& instance();
  void submit(StreamId s);
  void synchronize(StreamId s);
  std::uint64_t record(StreamId s) override;
  bool query(StreamId s, std::uint64_t marker) override;
};

}  // namespace memlens
