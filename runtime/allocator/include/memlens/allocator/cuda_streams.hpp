#pragma once
// The CUDA streams behind StreamIds, and CUDA events as StreamEvents markers. Built with
// the CUDA parts; the allocators of cuda:N and pinned memory, Event and the CUDA kernels
// all go through this one table. Only CUDA builds include it (it needs the toolkit's
// headers).
#include <cuda_runtime_api.h>

#include "memlens/allocator/stream.hpp"

namespace memlens::detail {

class CudaStreams final : public StreamEvents {
 public:
  // kDefaultStream is the legacy default stream; others are made by create().
  cudaStream_t stream(StreamId s);
  std::uint64_t record(StreamId s) override;
  bool query(StreamId s, std::uint64_t marker) override;
  StreamId create() override;
  void synchronize(StreamId s) override;
  void wait(StreamId waiter, StreamId s, std::uint64_t marker) override;
};

// The process's table (made on first use, never destroyed: work may outlive main()).
CudaStreams& cuda_streams();

}  // namespace memlens::detail
