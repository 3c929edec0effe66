#include <algorithm>
#include <map>
#include <mutex>

#include "memlens/allocator/stream.hpp"

namespace memlens {

namespace {
thread_local StreamId current = kDefaultStream;

struct StreamState {
  std::uint64_t submitted = 0, completed = 0;
};
std::mutex mu;
std::map<StreamId, StreamState> streams;
}  // namespace

StreamId current_stream() { return current; }
void set_current_stream(StreamId s) { current = s; }

SimStreams& SimStreams::instance() {
  static SimStreams s;
  return s;
}

void SimStreams::submit(StreamId s) {
  std::lock_guard lock(mu);
  ++streams[s].submitted;
}

void SimStreams::synchronize(StreamId s) {
  std::lock_guard lock(mu);
  auto& st = streams[s];
  st.completed = st.submitted;
}

std::uint64_t SimStreams::record(StreamId s) {
  std::lock_guard lock(mu);
  return streams[s].submitted;
}

bool SimStreams::query(StreamId s, std::uint64_t marker) {
  std::lock_guard lock(mu);
  return streams[s].completed >= marker;
}

StreamId SimStreams::create() {
  std::lock_guard lock(mu);
  StreamId id = streams.empty() ? 1 : std::max(1, streams.rbegin()->first + 1);
  streams[id];
  return id;
}

StreamId new_stream() { return accelerator_streams().create(); }
void synchronize(StreamId s) { accelerator_streams().synchronize(s); }

void DeviceEvent::record(StreamId s) {
  stream_ = s;
  marker_ = accelerator_streams().record(s);
  recorded_ = true;
}
bool DeviceEvent::query() const { return !recorded_ || accelerator_streams().query(stream_, marker_); }
void DeviceEvent::synchronize() const {
  if (recorded_) accelerator_streams().synchronize(stream_);
}
void DeviceEvent::wait(StreamId s) const {
  if (recorded_) accelerator_streams().wait(s, stream_, marker_);
}

}  // namespace memlens
