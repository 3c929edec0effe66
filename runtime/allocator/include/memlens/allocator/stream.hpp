#pragma once
// Streams: ordered queues of device work, PyTorch's current-stream model. Blocks of the
// caching allocator belong to the stream they were allocated on. On a GPU each stream is
// a CUDA stream (kDefaultStream the legacy default stream; new ones do not wait on it, as
// PyTorch's); on `sim` work runs synchronously on the host, so a stream's work is
// complete unless a test (or a simulated kernel) says it is in flight.
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

// The streams of one kind of device: where the allocator asks whether work recorded on a
// stream has finished, and what Event and new_stream use (CUDA streams and events on a
// GPU; SimStreams on sim).
class StreamEvents {
 public:
  virtual ~StreamEvents() = default;
  // A marker after all work submitted to `s` so far.
  virtual std::uint64_t record(StreamId s) = 0;
  virtual bool query(StreamId s, std::uint64_t marker) = 0;
  virtual StreamId create() = 0;
  // Waits on the host until the work of `s` is done.
  virtual void synchronize(StreamId s) = 0;
  // Work queued on `waiter` from now on starts after `marker` of `s`.
  virtual void wait(StreamId waiter, StreamId s, std::uint64_t marker) = 0;
};

// Simulated streams: `submit` puts work in flight, `synchronize` completes it.
class SimStreams final : public StreamEvents {
 public:
  static SimStreams& instance();
  void submit(StreamId s);
  void synchronize(StreamId s) override;
  std::uint64_t record(StreamId s) override;
  bool query(StreamId s, std::uint64_t marker) override;
  StreamId create() override;
  void wait(StreamId, StreamId, std::uint64_t) override {}  // sim work is done in order already
};

// The streams of the accelerator (what `cuda()` resolves to).
StreamEvents& accelerator_streams();
// A new stream of the accelerator (torch.cuda.Stream()).
StreamId new_stream();
// Waits until the work queued on `s` is done (Stream.synchronize()).
void synchronize(StreamId s);

// A point in a stream's work (torch.cuda.Event).
class DeviceEvent {
 public:
  // Marks the work queued on `s` so far.
  void record(StreamId s = current_stream());
  // Whether that work is done (true for an event never recorded, as PyTorch's).
  bool query() const;
  void synchronize() const;
  // Work queued on `s` from now on waits for this event (Stream.wait_event).
  void wait(StreamId s) const;

 private:
  StreamId stream_ = kDefaultStream;
  std::uint64_t marker_ = 0;
  bool recorded_ = false;
};

}  // namespace memlens
