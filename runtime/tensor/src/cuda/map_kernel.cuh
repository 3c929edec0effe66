#pragma once
// The one elementwise kernel: out[i] = f(in_0[i], ..., in_k[i]) over a Loop, in each
// operand's storage type, f called on compute types. Generic strided index math per
// element; where every operand is dense and aligned, four elements a thread through
// vector loads and stores.
#include <cuda/std/tuple>

#include <utility>

#include "device_types.cuh"
#include "strided_loop.hpp"

namespace memlens::cuda {

inline constexpr int kVec = 4;

template <class T>
struct alignas(sizeof(T) * kVec) Pack {
  T v[kVec];
};

template <class R, class F, class... S, std::size_t... I>
__device__ __forceinline__ void map_one(const Loop<1 + sizeof...(S)>& loop, std::int64_t i, const F& f,
                                        std::index_sequence<I...>) {
  constexpr int N = 1 + sizeof...(S);
  std::int64_t off[N];
  if (loop.contiguous) {
    for (int k = 0; k < N; ++k) off[k] = i;
  } else {
    loop.offsets(i, off);
  }
  R* out = reinterpret_cast<R*>(loop.data[0]) + off[0];
  *out = to_storage<R>(f(load(reinterpret_cast<const S*>(loop.data[I + 1]) + off[I + 1])...));
}

template <class R, class F, class... S, std::size_t... I>
__device__ __forceinline__ void map_pack(const Loop<1 + sizeof...(S)>& loop, std::int64_t pack, const F& f,
                                         std::index_sequence<I...>) {
  ::cuda::std::tuple<Pack<S>...> in{reinterpret_cast<const Pack<S>*>(loop.data[I + 1])[pack]...};
  Pack<R> out;
#pragma unroll
  for (int j = 0; j < kVec; ++j) out.v[j] = to_storage<R>(f(load(&::cuda::std::get<I>(in).v[j])...));
  reinterpret_cast<Pack<R>*>(loop.data[0])[pack] = out;
}

template <class R, class F, class... S>
__global__ void map_kernel(Loop<1 + sizeof...(S)> loop, bool vectorised, F f) {
  using Seq = std::index_sequence_for<S...>;
  const std::int64_t start = global_index(), stride = grid_stride();
  std::int64_t first_single = 0;
  if (vectorised) {
    const std::int64_t packs = loop.numel / kVec;
    for (std::int64_t p = start; p < packs; p += stride) map_pack<R, F, S...>(loop, p, f, Seq{});
    first_single = packs * kVec;
  }
  for (std::int64_t i = first_single + start; i < loop.numel; i += stride) map_one<R, F, S...>(loop, i, f, Seq{});
}

inline bool aligned_for_packs(const void* p, std::size_t element_size) {
  return reinterpret_cast<std::uintptr_t>(p) % (element_size * kVec) == 0;
}

// Queues map_kernel<R, F, S...> on `stream`; `name` names it in a launch error.
template <class R, class... S, class F>
void launch_map(const Loop<1 + sizeof...(S)>& loop, F f, cudaStream_t stream, const char* name) {
  if (loop.numel == 0) return;
  bool vectorised = loop.contiguous && loop.numel >= kVec && aligned_for_packs(loop.data[0], sizeof(R));
  int k = 1;
  ((vectorised = vectorised && aligned_for_packs(loop.data[k++], sizeof(S))), ...);
  map_kernel<R, F, S...><<<blocks_for(loop.numel, vectorised ? kVec : 1), kThreads, 0, stream>>>(loop, vectorised, f);
  check_launch(name);
}

}  // namespace memlens::cuda
