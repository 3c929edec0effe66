#include <map>
#include <mutex>

#include "memlens/runtime/stream.hpp"

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

}  // namespace memlens
