#include "memlens/allocator/cuda_streams.hpp"

#include <algorithm>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "memlens/allocator/errors.hpp"

namespace memlens::detail {

namespace {

void check(cudaError_t err, const std::string& call) {
  if (err != cudaSuccess) throw DeviceError(call + ": " + cudaGetErrorString(err));
}

// Markers of a stream count up; its events complete in order, so one completed marker
// means every earlier one has too, and their events can go.
struct StreamState {
  cudaStream_t stream = nullptr;
  std::uint64_t recorded = 0, completed = 0;
  std::map<std::uint64_t, cudaEvent_t> pending;
};

std::mutex mu;
std::map<StreamId, StreamState> table = {{kDefaultStream, StreamState{}}};

StreamState& state(StreamId s) {
  auto it = table.find(s);
  if (it == table.end()) throw DeviceError("stream " + std::to_string(s) + " is not a stream of this process");
  return it->second;
}

void forget_through(StreamState& st, std::uint64_t marker) {
  st.completed = std::max(st.completed, marker);
  for (auto it = st.pending.begin(); it != st.pending.end() && it->first <= marker;) {
    cudaEventDestroy(it->second);
    it = st.pending.erase(it);
  }
}

}  // namespace

CudaStreams& cuda_streams() {
  static CudaStreams* streams = new CudaStreams;
  return *streams;
}

StreamEvents& cuda_stream_events() { return cuda_streams(); }

cudaStream_t CudaStreams::stream(StreamId s) {
  std::lock_guard lock(mu);
  return state(s).stream;
}

StreamId CudaStreams::create() {
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  std::lock_guard lock(mu);
  const StreamId id = table.rbegin()->first + 1;
  table[id].stream = stream;
  return id;
}

std::uint64_t CudaStreams::record(StreamId s) {
  cudaEvent_t event = nullptr;
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  std::lock_guard lock(mu);
  StreamState& st = state(s);
  check(cudaEventRecord(event, st.stream), "cudaEventRecord");
  st.pending.emplace(++st.recorded, event);
  return st.recorded;
}

bool CudaStreams::query(StreamId s, std::uint64_t marker) {
  std::lock_guard lock(mu);
  StreamState& st = state(s);
  if (marker <= st.completed) return true;
  auto it = st.pending.find(marker);
  if (it == st.pending.end()) return true;
  const cudaError_t err = cudaEventQuery(it->second);
  if (err == cudaErrorNotReady) return false;
  check(err, "cudaEventQuery");
  forget_through(st, marker);
  return true;
}

void CudaStreams::synchronize(StreamId s) {
  cudaStream_t stream = this->stream(s);
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  std::lock_guard lock(mu);
  StreamState& st = state(s);
  forget_through(st, st.recorded);
}

void CudaStreams::wait(StreamId waiter, StreamId s, std::uint64_t marker) {
  std::lock_guard lock(mu);
  StreamState& st = state(s);
  auto it = st.pending.find(marker);
  if (marker <= st.completed || it == st.pending.end()) return;  // already done
  check(cudaStreamWaitEvent(state(waiter).stream, it->second, 0), "cudaStreamWaitEvent");
}

}  // namespace memlens::detail
